package rrule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rrulego "github.com/teambition/rrule-go"
)

// naiveMonthMask is filter.monthMask computed day by day.
func naiveMonthMask(f *filter, m int, leap bool, wd1 int) uint32 {
	if f.byMonth != 0 && f.byMonth&(1<<uint(m)) == 0 {
		return 0
	}
	dim := daysInMonth(2001, m)
	ylen, yd1 := 365, cumulativeDays[m-1]+1
	if leap {
		ylen++
		dim = daysInMonth(2000, m)
		if m > 2 {
			yd1++
		}
	}
	var mask uint32
	for d := 1; d <= dim; d++ {
		wd, yd := (wd1+d-1)%7, yd1+d-1
		if f.byWeekday != 0 && f.byWeekday&(1<<uint(wd)) == 0 {
			continue
		}
		if f.byMonthDay|f.byNMonthDay != 0 &&
			f.byMonthDay&(1<<uint(d)) == 0 && f.byNMonthDay&(1<<uint(dim-d+1)) == 0 {
			continue
		}
		if f.hasYearDay && !bitTest(f.byYearDay[:], int64(yd)) && !bitTest(f.byNYearDay[:], int64(ylen-yd+1)) {
			continue
		}
		mask |= 1 << uint(d)
	}
	if f.nthInMonth && f.nth != "" {
		var nth uint32
		f.markNth(func(i int) { nth |= 1 << uint(i+1) }, 0, dim-1, wd1)
		mask &= nth
	}
	return mask
}

// TestMonthMaskMatchesNaive checks the month masks, computed with bit
// operations, against a day-by-day walk, on random filters.
func TestMonthMaskMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(61, 67))
	for range 2000 {
		var f filter
		chance := func(p float64) bool { return rng.Float64() < p }
		if chance(0.3) {
			f.byMonth = uint16(rng.Uint32()) &^ 1 & 0x1ffe
		}
		if chance(0.5) {
			f.byWeekday = uint8(rng.Uint32() & 0x7f)
		}
		if chance(0.5) {
			f.byMonthDay = rng.Uint32() &^ 1 & uint32(rng.Uint32())
		}
		if chance(0.5) {
			f.byNMonthDay = rng.Uint32() &^ 1 & uint32(rng.Uint32())
		}
		if chance(0.4) {
			f.hasYearDay = true
			for range 1 + rng.IntN(40) {
				bitSet(f.byYearDay[:], 1+rng.Int64N(366))
				bitSet(f.byNYearDay[:], 1+rng.Int64N(366))
			}
		}
		if chance(0.3) {
			f.nthInMonth = true
			f.nth = string([]byte{byte(rng.IntN(7)), byte(int8(signed(rng, 5)))})
		}
		for m := 1; m <= 12; m++ {
			for _, leap := range []bool{false, true} {
				for wd1 := range 7 {
					require.Equal(t, naiveMonthMask(&f, m, leap, wd1), f.monthMask(m, leap, wd1), "%+v, month %d, leap %v, 1st on %d", f, m, leap, wd1)
				}
			}
		}
	}
}

// TestParseStepsExact checks that Parse counts its work the same way
// whatever its budget: a schedule is accepted with exactly the steps it
// took, and refused for MaxParseSteps with one fewer.
func TestParseStepsExact(t *testing.T) {
	t.Parallel()
	type text struct{ name, text, zone string }
	var texts []text
	for _, c := range append(append([]struct{ name, text string }{}, worstAccepted...), typicalSchedules...) {
		texts = append(texts, text{c.name, c.text, "Europe/Paris"})
	}
	rng := rand.New(rand.NewPCG(71, 73))
	for i := range 300 {
		c := genSchedule(rng)
		if i%2 == 1 {
			c = genCostly(rng)
		}
		texts = append(texts, text{fmt.Sprint("generated ", i), c.Text(), c.Zone})
	}
	created := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	accepted := 0
	for _, c := range texts {
		s, err := Parse(c.text, Options{Timezone: c.zone, Created: created})
		if err != nil {
			continue
		}
		accepted++
		steps := s.parseSteps
		require.LessOrEqual(t, steps, DefaultLimits.MaxParseSteps, c.name)
		exact, err := Parse(c.text, Options{Timezone: c.zone, Created: created, Limits: Limits{MaxParseSteps: steps}})
		require.NoError(t, err, "%s\n%s", c.name, c.text)
		require.Equal(t, steps, exact.parseSteps, c.name)
		_, err = Parse(c.text, Options{Timezone: c.zone, Created: created, Limits: Limits{MaxParseSteps: steps - 1}})
		var le *LimitError
		require.ErrorAs(t, err, &le, "%s\n%s", c.name, c.text)
		require.Equal(t, "MaxParseSteps", le.Limit, c.name)
	}
	require.Greater(t, accepted, 200)
}

// TestTablesShared checks that rules with the same day filter, or the
// same times and INTERVAL, share their tables, and that the schedule's
// size counts them once.
func TestTablesShared(t *testing.T) {
	t.Parallel()
	const start = "DTSTART;TZID=Europe/Paris:20260101T000000\n"
	one, err := Parse(start+"RRULE:FREQ=MONTHLY;BYMONTHDAY=1,15;BYHOUR=6", Options{})
	require.NoError(t, err)
	two, err := Parse(start+"RRULE:FREQ=MONTHLY;BYMONTHDAY=1,15;BYHOUR=6\nRRULE:FREQ=DAILY;BYMONTHDAY=1,15;BYHOUR=18", Options{})
	require.NoError(t, err)
	require.Same(t, two.rules[0].months, two.rules[1].months)
	require.Less(t, two.size-one.size, monthTableBytes, "the second rule's table is the first's")

	slots, err := Parse(start+"RRULE:FREQ=MINUTELY;INTERVAL=10;BYHOUR=9,17;BYSECOND=10\nRRULE:FREQ=MINUTELY;INTERVAL=10;BYHOUR=9,17;BYSECOND=40", Options{})
	require.NoError(t, err)
	require.NotNil(t, slots.rules[0].slots)
	require.Same(t, &slots.rules[0].slots[0], &slots.rules[1].slots[0])

	// A filter of weekdays only takes a table shared by every schedule.
	weekly, err := Parse(start+"RRULE:FREQ=WEEKLY;BYDAY=MO,TH", Options{})
	require.NoError(t, err)
	daily, err := Parse("FREQ=DAILY;BYDAY=TH,MO;BYHOUR=7", Options{Created: time.Now()})
	require.NoError(t, err)
	require.Same(t, weekly.rules[0].months, daily.rules[0].months)
	require.Less(t, weekly.size, monthTableBytes+one.size-monthTableBytes/2, "a shared table is not counted")
}

// TestFullSlotsAsNone checks that BYHOUR, BYMINUTE or BYSECOND allowing
// every slot that INTERVAL reaches keep no table and give the same
// occurrences as the rule without them.
func TestFullSlotsAsNone(t *testing.T) {
	t.Parallel()
	const start = "DTSTART;TZID=Europe/Paris:20260328T000000\nRRULE:"
	for _, tt := range []struct{ filtered, plain string }{
		{"FREQ=SECONDLY;INTERVAL=8;BYSECOND=" + numbers(0, 59), "FREQ=SECONDLY;INTERVAL=8"},
		{"FREQ=SECONDLY;INTERVAL=7;BYSECOND=" + numbers(0, 59), "FREQ=SECONDLY;INTERVAL=7"},
		{"FREQ=MINUTELY;INTERVAL=7;BYMINUTE=" + numbers(0, 59), "FREQ=MINUTELY;INTERVAL=7"},
		{"FREQ=HOURLY;INTERVAL=5;BYHOUR=" + numbers(0, 23), "FREQ=HOURLY;INTERVAL=5"},
		{"FREQ=HOURLY;INTERVAL=6;BYHOUR=0,6,12,18", "FREQ=HOURLY;INTERVAL=6"},
	} {
		f, err := Parse(start+tt.filtered, Options{})
		require.NoError(t, err)
		require.Nil(t, f.rules[0].slots, tt.filtered)
		p, err := Parse(start+tt.plain, Options{})
		require.NoError(t, err)
		for _, at := range []string{"2026-03-28T00:00:00Z", "2026-03-29T00:59:58Z", "2026-10-25T00:30:00Z", "2031-07-01T12:34:56Z"} {
			require.Equal(t, nextN(p, utc(at), 50), nextN(f, utc(at), 50), "%s from %s", tt.filtered, at)
		}
	}
}

// TestCountShortcuts checks the COUNT rules Parse ends without walking
// them (even periods, or a DAILY day filter counted by months) against
// rrule-go: the last occurrence, and how many there are.
func TestCountShortcuts(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"DTSTART:20260107T101500Z\nRRULE:FREQ=DAILY;BYDAY=MO,WE,FR;BYHOUR=9,17;COUNT=3001",
		"DTSTART:20260131T101500Z\nRRULE:FREQ=DAILY;BYMONTHDAY=31,-1,15;COUNT=777",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYMINUTE=0,30;COUNT=41",
		"DTSTART:20260107T101500Z\nRRULE:FREQ=DAILY;COUNT=1",
		"DTSTART:20260107T101500Z\nRRULE:FREQ=WEEKLY;INTERVAL=3;BYDAY=TU,TH;BYHOUR=8,20;COUNT=2501",
		"DTSTART:20260105T101500Z\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1,2;COUNT=401",
		"DTSTART:20260107T101500Z\nRRULE:FREQ=HOURLY;INTERVAL=5;COUNT=20000",
		"DTSTART:20260107T101512Z\nRRULE:FREQ=MINUTELY;INTERVAL=90;BYSECOND=5,10;COUNT=50001",
	} {
		want, err := rrulego.StrToRRule(text)
		require.NoError(t, err)
		all := want.All()
		last := all[len(all)-1]
		s, err := Parse(text, Options{})
		require.NoError(t, err, text)
		n := 0
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for {
			next, ok := s.Next(at)
			if !ok {
				break
			}
			n, at = n+1, next
		}
		require.Equal(t, len(all), n, text)
		require.True(t, at.Equal(last), "%s: last %v, want %v", text, at, last)
	}
}

// TestParseWorstMemory checks that the schedules that keep the most stay
// within the bound the limits give them: their tables count a step per 4
// bytes against Limits.MaxParseSteps, and the rest grows with the rules
// and the text.
func TestParseWorstMemory(t *testing.T) {
	t.Parallel()
	for _, c := range worstAccepted {
		s, err := Parse(c.text, Options{})
		require.NoError(t, err, c.name)
		bound := tableBytesPerStep*DefaultLimits.MaxParseSteps + 1024*len(s.rules) + 16*len(c.text)
		require.LessOrEqual(t, s.size, bound, c.name)
	}
}

// TestSkippingRules checks, on DAILY rules (and finer ones with an
// INTERVAL of a day or more) whose INTERVAL skips over runs of passing
// days, which Parse bounds by counting the runs a search may skip, that
// they are accepted, that no search takes more steps than the bound, and
// that they expand as the naive walk does.
func TestSkippingRules(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(79, 83))
	for _, rule := range []string{
		"FREQ=DAILY;INTERVAL=2;BYDAY=MO,SA,SU,TU;BYHOUR=8;BYMONTH=5,6,7,10",  // short runs at month ends
		"FREQ=DAILY;INTERVAL=2;BYHOUR=5,8,17,23;BYMONTH=2,12;BYDAY=SU,TH,TU", // every run short
		"FREQ=DAILY;INTERVAL=8;BYMONTH=4;BYDAY=FR",
		"FREQ=DAILY;INTERVAL=4;BYMONTHDAY=-26,-25,30",
		"FREQ=DAILY;INTERVAL=10;BYDAY=MO,TU;BYHOUR=6", // weekdays only
		"FREQ=DAILY;INTERVAL=12;BYDAY=FR,SA;BYHOUR=10,17",
		"FREQ=HOURLY;INTERVAL=30;BYDAY=WE",
		"FREQ=HOURLY;INTERVAL=36;BYDAY=MO,SA,WE;BYMONTH=1,2,3",
	} {
		for _, zone := range []string{"UTC", "Europe/Paris"} {
			c := genCase{Zone: zone, Form: "tzid", Start: wallOf(2026, 1, 3, 7, 0, 0), Rules: []string{rule}}
			s, err := Parse(c.Text(), Options{})
			require.NoError(t, err, c.Text())
			from := resolve(c.zoneOf(), c.Start).unix - secondsPerDay
			to := from + 30*365*secondsPerDay
			requireWithinBound(t, s, c.Text(), walkTimes(rng, s, from, to))
			want := naiveInstants(t, c, to+400*secondsPerDay)
			compareWindow(t, rng, c.Text(), s, want, from, to, to+300*secondsPerDay)
		}
	}
}
