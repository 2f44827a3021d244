package rrule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rrulego "github.com/teambition/rrule-go"
)

// naiveInstants walks every rule of c with rrule-go from DTSTART, up to the
// wall time limit, and returns the sorted unique instants with RDATE added
// and EXDATE removed. rrule-go runs in UTC, where every local time exists,
// and each local time is then placed with resolve: this is rrule-go's walk
// with the RFC 5545 DST correction.
func naiveInstants(t testing.TB, c genCase, limit int64) []int64 {
	loc := c.zoneOf()
	var out []int64
	for _, body := range c.Rules {
		opt, err := rrulego.StrToROption(body)
		require.NoError(t, err, body)
		opt.Dtstart = time.Unix(c.Start, 0).UTC()
		r, err := rrulego.NewRRule(*opt)
		require.NoError(t, err, body)
		next := r.Iterator()
		for {
			w, ok := next()
			if !ok || w.Unix() > limit {
				break
			}
			u := resolve(loc, w.Unix()).unix
			if c.HasUtil && u > c.Until {
				continue
			}
			out = append(out, u)
		}
	}
	out = append(out, c.RDates...)
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(u int64) bool { return slices.Contains(c.ExDates, u) })
}

// firstAfter returns the first of the sorted instants after t.
func firstAfter(list []int64, t int64) (int64, bool) {
	i, found := slices.BinarySearch(list, t)
	if found {
		i++
	}
	if i == len(list) {
		return 0, false
	}
	return list[i], true
}

// compareWindow checks Next and First against want, the complete list of
// occurrences up to horizon, for times in [from, to].
func compareWindow(t *testing.T, rng *rand.Rand, label string, s *Schedule, want []int64, from, to, horizon int64) {
	t.Helper()
	check := func(at int64, got time.Time, ok bool, what string) {
		t.Helper()
		exp, expOK := firstAfter(want, at)
		if !expOK || exp > horizon {
			// Beyond what want covers: only "nothing before the horizon".
			if ok {
				require.Greater(t, got.Unix(), horizon, "%s\n%s(%s)", label, what, time.Unix(at, 0).UTC())
			}
			return
		}
		require.True(t, ok, "%s\n%s(%s): got none, want %s", label, what, time.Unix(at, 0).UTC(), time.Unix(exp, 0).UTC())
		require.Equal(t, time.Unix(exp, 0).UTC(), got.UTC(), "%s\n%s(%s)", label, what, time.Unix(at, 0).UTC())
	}
	// Walk the window occurrence by occurrence.
	at := from - 1
	for i := 0; at < to && i < 5000; i++ {
		got, ok := s.Next(time.Unix(at, 0))
		check(at, got, ok, "Next")
		if !ok {
			break
		}
		at = got.Unix()
	}
	// And from random times.
	for range 30 {
		at := from + rng.Int64N(to-from+1)
		got, ok := s.Next(time.Unix(at, 0))
		check(at, got, ok, "Next")
		got, ok = s.First(time.Unix(at, 0))
		check(at-1, got, ok, "First")
	}
}

// TestNextMatchesNaiveWalk compares Next and First with rrule-go's walk
// from DTSTART (corrected for DST as RFC 5545 wants) on generated rules
// with old DTSTARTs.
func TestNextMatchesNaiveWalk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2026, 5545))
	const n = 700
	rejected := 0
	for i := range n {
		c := genSchedule(rng)
		s, err := Parse(c.Text(), c.Options())
		if err != nil {
			require.ErrorIs(t, err, ErrNoOccurrence, "%s", c.Text())
			rejected++
			continue
		}
		want := naiveInstants(t, c, c.Horizon+2*secondsPerDay)
		if c.Form != "bare" && rng.IntN(4) == 0 {
			// Exclude a few occurrences of the window.
			for _, u := range want {
				if u >= c.From && u <= c.To && rng.IntN(3) == 0 && len(c.ExDates) < 4 {
					c.ExDates = append(c.ExDates, u)
				}
			}
			if s, err = Parse(c.Text(), c.Options()); err != nil {
				require.ErrorIs(t, err, ErrNoOccurrence, "%s", c.Text())
				continue
			}
			want = naiveInstants(t, c, c.Horizon+2*secondsPerDay)
		}
		label := fmt.Sprintf("case %d, zone %s:\n%s", i, c.Zone, c.Text())
		compareWindow(t, rng, label, s, want, c.From, c.To, c.Horizon)
	}
	t.Logf("%d schedules, %d refused as having no occurrence", n, rejected)
	require.Less(t, rejected, n/5)
}
