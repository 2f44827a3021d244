package rrule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireWithinBound checks that Next from each of the times takes no more
// steps than the bound Parse computed.
func requireWithinBound(t *testing.T, s *Schedule, label string, times []int64) {
	t.Helper()
	for _, at := range times {
		_, _, steps := s.nextSteps(at)
		require.LessOrEqual(t, steps, s.bound, "%s\nNext(%d)", label, at)
	}
}

// walkTimes returns times to ask a schedule about: each occurrence in
// [from, to] and the second before it, and random times.
func walkTimes(rng *rand.Rand, s *Schedule, from, to int64) []int64 {
	var out []int64
	at := from
	for i := 0; at < to && i < 3000; i++ {
		x, ok := s.next(at)
		if !ok {
			break
		}
		out = append(out, x, x-1)
		at = x
	}
	for range 100 {
		out = append(out, from+rng.Int64N(to-from+1))
	}
	return out
}

// TestStepsWithinBound checks, on generated schedules, that no search
// takes more steps than the bound Parse computed for it.
func TestStepsWithinBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 23))
	const n = 1500
	for i := range n {
		c := genSchedule(rng)
		s, err := Parse(c.Text(), c.Options())
		if err != nil {
			require.ErrorIs(t, err, ErrNoOccurrence, "%s", c.Text())
			continue
		}
		label := fmt.Sprintf("case %d, zone %s:\n%s", i, c.Zone, c.Text())
		from := c.From - int64(rng.IntN(1000))*secondsPerDay
		requireWithinBound(t, s, label, walkTimes(rng, s, from, c.To))
	}
}

// genCostly returns a schedule meant to be costly to search: wide
// INTERVALs that skip over sparse filters, in zones with daylight saving
// time. Unlike genSchedule's, its rules need not be cheap to walk naively.
func genCostly(rng *rand.Rand) genCase {
	f := frequency(rng.IntN(7))
	widths := [...]int{yearly: 30, monthly: 300, weekly: 600, daily: 800, hourly: 5000, minutely: 20000, secondly: 200000}
	parts := []string{"FREQ=" + f.String(), fmt.Sprintf("INTERVAL=%d", 1+rng.IntN(widths[f]))}
	chance := func(p float64) bool { return rng.Float64() < p }
	if chance(0.5) {
		parts = append(parts, "BYMONTH="+joinInts(pickN(rng, 1+rng.IntN(2), func() int { return 1 + rng.IntN(12) })))
	}
	if f != weekly && chance(0.4) {
		parts = append(parts, "BYMONTHDAY="+joinInts(pickN(rng, 1+rng.IntN(2), func() int { return signed(rng, 31) })))
	}
	if (f == yearly || f >= hourly) && chance(0.15) {
		parts = append(parts, "BYYEARDAY="+joinInts(pickN(rng, 1+rng.IntN(2), func() int { return signed(rng, 366) })))
	}
	if chance(0.5) {
		var days []string
		for _, d := range pickN(rng, 1+rng.IntN(3), func() int { return rng.IntN(7) }) {
			days = append(days, weekdayNames[d])
		}
		parts = append(parts, "BYDAY="+strings.Join(days, ","))
	}
	if chance(0.4) {
		parts = append(parts, "BYHOUR="+joinInts(pickN(rng, 1+rng.IntN(3), func() int { return rng.IntN(24) })))
	}
	if f >= minutely && chance(0.4) {
		parts = append(parts, "BYMINUTE="+joinInts(pickN(rng, 1+rng.IntN(3), func() int { return rng.IntN(60) })))
	}
	if f == secondly && chance(0.4) {
		parts = append(parts, "BYSECOND="+joinInts(pickN(rng, 1+rng.IntN(3), func() int { return rng.IntN(60) })))
	}
	if len(parts) > 2 && chance(0.2) {
		parts = append(parts, "BYSETPOS="+joinInts(pickN(rng, 1+rng.IntN(2), func() int { return signed(rng, 5) })))
	}
	c := genCase{Zone: genZones[rng.IntN(len(genZones))], Form: "tzid"}
	switch {
	case chance(0.15):
		parts = append(parts, fmt.Sprintf("COUNT=%d", 1+rng.IntN(2000)))
	case chance(0.15):
		c.Until, c.HasUtil = time.Date(2030+rng.IntN(300), 1, 1, 0, 0, 0, 0, time.UTC).Unix(), true
	}
	c.Rules = []string{strings.Join(parts, ";")}
	c.Start = wallOf(1950+rng.IntN(150), 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), []int{0, 30, rng.IntN(60)}[rng.IntN(3)], 0)
	return c
}

// costlyTimes returns times to ask a schedule about: just before and
// after its first occurrences from 2020, and times over three centuries.
func costlyTimes(rng *rand.Rand, s *Schedule) []int64 {
	from := utc("2020-01-01T00:00:00Z").Unix()
	times := walkTimes(rng, s, from, from+40*365*secondsPerDay)
	for range 300 {
		times = append(times, from-100*365*secondsPerDay+rng.Int64N(400*365*secondsPerDay))
	}
	return times
}

// TestCostlyWithinBound checks, on schedules meant to be costly, that no
// search takes more steps than the bound Parse computed, under the default
// limits.
func TestCostlyWithinBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 37))
	accepted := 0
	for range 600 {
		text := genCostly(rng).Text()
		s, err := Parse(text, Options{})
		if err != nil {
			var le *LimitError
			if !errors.As(err, &le) {
				require.ErrorIs(t, err, ErrNoOccurrence, "%s", text)
			}
			continue
		}
		accepted++
		require.LessOrEqual(t, s.bound, DefaultLimits.MaxSteps, text)
		requireWithinBound(t, s, text, costlyTimes(rng, s))
	}
	t.Logf("%d of 600 accepted", accepted)
	require.Greater(t, accepted, 100)
}

// FuzzBound checks, on schedules meant to be costly, that no search takes
// more steps than the bound Parse computed.
func FuzzBound(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		rng := rand.New(rand.NewPCG(a, b))
		text := genCostly(rng).Text()
		s, err := Parse(text, Options{})
		if err != nil {
			return
		}
		for _, at := range costlyTimes(rng, s) {
			if _, _, steps := s.nextSteps(at); steps > s.bound {
				t.Fatalf("%s\nNext(%d) took %d steps, above the bound %d", text, at, steps, s.bound)
			}
		}
	})
}

// TestCostlyMatchesNaiveWalk compares Next and First with the naive walk
// on schedules meant to be costly, over a window after DTSTART that the
// walk can afford.
func TestCostlyMatchesNaiveWalk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 43))
	units := [...]int64{yearly: 366 * secondsPerDay, monthly: 31 * secondsPerDay, weekly: 7 * secondsPerDay, daily: secondsPerDay, hourly: 3600, minutely: 60, secondly: 1}
	compared := 0
	for range 300 {
		c := genCostly(rng)
		s, err := Parse(c.Text(), c.Options())
		if err != nil {
			require.ErrorIs(t, err, ErrNoOccurrence, "%s", c.Text())
			continue
		}
		rc, err := parseRecur(c.Rules[0], 1<<30)
		require.NoError(t, err)
		// About 30,000 periods of the rule, at most 60 years.
		span := min(60*365*secondsPerDay, 30_000*int64(rc.interval)*units[rc.freq])
		start := resolve(c.zoneOf(), c.Start).unix
		c.From, c.To = start-secondsPerDay, start+span
		c.Horizon = c.To + span/4
		want := naiveInstants(t, c, c.Horizon+2*secondsPerDay)
		compareWindow(t, rng, c.Text(), s, want, c.From, c.To, c.Horizon)
		compared++
	}
	t.Logf("%d schedules compared", compared)
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// TestCycleDays checks the bitset of cycleDays, laid out a year at a time
// and from a pool, against one laid out month by month from scratch, for
// random month tables, each built twice so that a reused bitset is seen.
func TestCycleDays(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 50 {
		var months [monthShapes]uint32
		for sh := range months {
			switch i % 3 {
			case 0: // sparse: a few days now and then
				if rng.IntN(4) == 0 {
					months[sh] = 1 << (1 + rng.IntN(shapeDays(uint8(sh))))
				}
			default:
				months[sh] = rng.Uint32() & (1<<(shapeDays(uint8(sh))+1) - 2)
			}
		}
		want := make([]uint64, cycleWords)
		at := 0
		for _, sh := range &cycle.months {
			for d := range shapeDays(sh) {
				if months[sh]&(1<<(d+1)) != 0 {
					want[(at+d)>>6] |= 1 << ((at + d) & 63)
				}
			}
			at += shapeDays(sh)
		}
		for d := range 6 {
			if want[d>>6]&(1<<(d&63)) != 0 {
				want[(146097+d)>>6] |= 1 << ((146097 + d) & 63)
			}
		}
		for range 2 {
			w := newWork(&DefaultLimits)
			got, err := (&rule{months: &months}).cycleDays(w)
			require.NoError(t, err)
			require.Equal(t, want, got, "table %d", i)
			w.release()
		}
	}
}

// TestMonthOf checks monthOf and monthAt against the date conversions on
// every day of two 400-year cycles, one of them before year 0.
func TestMonthOf(t *testing.T) {
	for _, start := range []int64{cycleStart - 3*146097, cycleStart} {
		for day := start; day < start+146097; day++ {
			y, m, d := civilFromDays(day)
			j, gotD := monthOf(day)
			if gotD != d || j != int(floorMod(int64(y-2000)*12+int64(m-1), 4800)) {
				t.Fatalf("monthOf(%d) = month %d, day %d; want %d-%02d-%02d", day, j, gotD, y, m, d)
			}
			if d == 1 {
				sh, first := monthAt(int64(y)*12 + int64(m-1))
				require.Equal(t, day, first)
				require.Equal(t, uint8(monthShape(m, isLeap(y), weekdayOf(day))), sh)
				require.Equal(t, daysInMonth(y, m), shapeDays(sh))
			}
		}
	}
}
