package rrule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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
		start, count := opt.Dtstart, opt.Count
		if opt.Freq == rrulego.WEEKLY && len(opt.Bysetpos) > 0 {
			// rrule-go, like dateutil, applies BYSETPOS to the days of
			// the first week from DTSTART on; RFC 5545 to the whole week
			// (from WKST), dropping what precedes DTSTART afterwards. Walk
			// from the start of DTSTART's week, with the weekday DTSTART
			// gave by default, and count only what follows DTSTART.
			if len(opt.Byweekday) == 0 {
				opt.Byweekday = []rrulego.Weekday{weekdays[weekdayOf(floorDiv(c.Start, secondsPerDay))]}
			}
			back := floorMod(int64(weekdayOf(floorDiv(c.Start, secondsPerDay))-opt.Wkst.Day()), 7)
			opt.Dtstart = start.AddDate(0, 0, -int(back))
			opt.Count = 0
		}
		r, err := rrulego.NewRRule(*opt)
		require.NoError(t, err, body)
		next := r.Iterator()
		emitted := 0
		for {
			w, ok := next()
			if !ok || w.Unix() > limit || count > 0 && emitted == count {
				break
			}
			if w.Before(start) {
				continue
			}
			emitted++
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

// weekdays are rrule-go's weekdays, Monday first.
var weekdays = []rrulego.Weekday{rrulego.MO, rrulego.TU, rrulego.WE, rrulego.TH, rrulego.FR, rrulego.SA, rrulego.SU}

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

// TestTrickyRulesMatchNaiveWalk compares hand-picked rules that random
// generation rarely reaches with the naive walk, over ten years.
func TestTrickyRulesMatchNaiveWalk(t *testing.T) {
	t.Parallel()
	rules := []string{
		"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,-1,-2,-3",
		"FREQ=YEARLY;BYWEEKNO=-1,1,52,53;BYDAY=SU,MO;WKST=SU",
		"FREQ=YEARLY;BYWEEKNO=53;WKST=TH",
		"FREQ=YEARLY;BYYEARDAY=-1,1,60,366;BYHOUR=0,12",
		"FREQ=YEARLY;BYDAY=53MO,-53SU,1SU",
		"FREQ=YEARLY;BYMONTH=2,12;BYDAY=-5FR,5FR",
		"FREQ=MONTHLY;BYMONTHDAY=-1,-31,29,30,31",
		"FREQ=WEEKLY;INTERVAL=3;WKST=SU;BYDAY=SA,SU;BYSETPOS=-1",
		"FREQ=WEEKLY;BYMONTH=1,12;BYDAY=TU,SU;WKST=WE",
		"FREQ=HOURLY;INTERVAL=5;BYHOUR=1,2,3,4,5,6,7,8,9,10;BYMINUTE=0,30;BYSETPOS=-1",
		"FREQ=MINUTELY;INTERVAL=7;BYHOUR=0,23;BYSECOND=0,59",
		"FREQ=MINUTELY;INTERVAL=1441;BYDAY=SA",
		"FREQ=DAILY;INTERVAL=17;BYMONTH=2;BYMONTHDAY=29",
		"FREQ=DAILY;BYDAY=FR;BYMONTHDAY=13;BYHOUR=13;BYMINUTE=13;BYSECOND=13",
		"FREQ=SECONDLY;INTERVAL=59;BYMINUTE=0;BYHOUR=2",
		"FREQ=HOURLY;INTERVAL=25;BYYEARDAY=100,-100",
		"FREQ=YEARLY;INTERVAL=7;BYMONTH=2;BYMONTHDAY=29;COUNT=20",
		"FREQ=MONTHLY;INTERVAL=13;BYDAY=-1SU;COUNT=300",
		"FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;BYHOUR=2,3;BYMINUTE=30;COUNT=9000",
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for _, zone := range []string{"UTC", "Europe/Paris", "America/New_York"} {
		for _, body := range rules {
			c := genCase{
				Zone: zone, Form: "tzid", Rules: []string{body},
				Start: wallOf(1999, 3, 27, 2, 30, 0),
				From:  utc("2025-01-01T00:00:00Z").Unix(), To: utc("2031-01-01T00:00:00Z").Unix(),
			}
			if strings.HasPrefix(body, "FREQ=SECONDLY") || strings.HasPrefix(body, "FREQ=MINUTELY") {
				c.Start = wallOf(2025, 10, 20, 2, 30, 0)
				c.From, c.To = utc("2026-03-01T00:00:00Z").Unix(), utc("2026-03-31T00:00:00Z").Unix()
			}
			c.Horizon = c.To + 400*secondsPerDay
			s, err := Parse(c.Text(), c.Options())
			require.NoError(t, err, c.Text())
			want := naiveInstants(t, c, c.Horizon+2*secondsPerDay)
			compareWindow(t, rng, fmt.Sprintf("zone %s:\n%s", zone, c.Text()), s, want, c.From, c.To, c.Horizon)
		}
	}
}

// TestFirstPeriodMatchesNaiveWalk compares, from before DTSTART, rules
// with BYSETPOS of every frequency with the naive walk, for DTSTARTs on
// each day of a week and at several times of day: the period holding
// DTSTART is where RFC 5545 and dateutil may part (see naiveInstants).
func TestFirstPeriodMatchesNaiveWalk(t *testing.T) {
	t.Parallel()
	rules := []string{
		"FREQ=WEEKLY;BYDAY=MO,TU,SU,SA,TH;BYSETPOS=3,2",
		"FREQ=WEEKLY;WKST=TH;BYDAY=MO,FR,SU;BYSETPOS=1,-1",
		"FREQ=WEEKLY;INTERVAL=2;WKST=SU;BYDAY=TU,WE;BYHOUR=6,18;BYSETPOS=2,-1;COUNT=7",
		"FREQ=WEEKLY;BYHOUR=6,12,18;BYSETPOS=2",
		"FREQ=MONTHLY;BYDAY=MO,WE;BYSETPOS=1,3,-1",
		"FREQ=YEARLY;BYMONTH=3,6;BYDAY=TU;BYSETPOS=2,-2;COUNT=5",
		"FREQ=DAILY;BYHOUR=6,12,18;BYSETPOS=1,2",
		"FREQ=HOURLY;BYMINUTE=0,30,45;BYSETPOS=1,-2",
		"FREQ=MINUTELY;BYSECOND=10,20,30;BYSETPOS=2",
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, body := range rules {
		for day := range 7 {
			for _, clock := range []int{0, 9*3600 + 30*60, 17 * 3600} {
				c := genCase{
					Zone: "Europe/Paris", Form: "tzid", Rules: []string{body},
					Start: wallOf(2026, 3, 23+day, 0, 0, 0) + int64(clock),
					From:  utc("2026-03-20T00:00:00Z").Unix(), To: utc("2026-04-20T00:00:00Z").Unix(),
				}
				c.Horizon = c.To + 40*secondsPerDay
				if strings.Contains(body, "HOURLY") || strings.Contains(body, "MINUTELY") {
					c.To = utc("2026-04-02T00:00:00Z").Unix()
					c.Horizon = c.To + 2*secondsPerDay
				}
				s, err := Parse(c.Text(), c.Options())
				require.NoError(t, err, c.Text())
				want := naiveInstants(t, c, c.Horizon+2*secondsPerDay)
				compareWindow(t, rng, c.Text(), s, want, c.From, c.To, c.Horizon)
			}
		}
	}
}

// TestLongGapsMatchNaiveWalk compares rules with the naive walk across
// the longest zone changes: Samoa skipped 30 December 2011 (a 24-hour
// gap), Kwajalein 21 August 1993, and Lord Howe moves by half an hour.
// It also checks that no search takes more steps than its bound there.
func TestLongGapsMatchNaiveWalk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(59, 61))
	edges := []struct {
		zone string
		at   time.Time
	}{
		{"Pacific/Apia", time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC)},
		{"Pacific/Kwajalein", time.Date(1993, 8, 20, 12, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC)},
	}
	rules := []string{
		"FREQ=HOURLY;INTERVAL=5",
		"FREQ=MINUTELY;INTERVAL=45;BYHOUR=0,1,2,23",
		"FREQ=SECONDLY;INTERVAL=1793;BYMINUTE=0,30",
		"FREQ=DAILY;BYHOUR=0,2,12,23;BYMINUTE=0,30",
		"FREQ=WEEKLY;BYDAY=TH,FR,SA;BYHOUR=1,13",
		"FREQ=HOURLY;BYSETPOS=-1;BYMINUTE=10,50",
	}
	for _, e := range edges {
		for _, body := range rules {
			loc := resolveZone(t, e.zone)
			start := e.at.Add(-3 * 24 * time.Hour).In(loc)
			c := genCase{
				Zone: e.zone, Form: "tzid", Rules: []string{body},
				Start: wallOf(start.Year(), int(start.Month()), start.Day(), 0, 0, 0),
				From:  e.at.Add(-2 * 24 * time.Hour).Unix(), To: e.at.Add(2 * 24 * time.Hour).Unix(),
			}
			c.Horizon = c.To + 2*secondsPerDay
			s, err := Parse(c.Text(), c.Options())
			require.NoError(t, err, c.Text())
			want := naiveInstants(t, c, c.Horizon+2*secondsPerDay)
			compareWindow(t, rng, c.Text(), s, want, c.From, c.To, c.Horizon)
			var times []int64
			for at := c.From; at < c.To; at += 611 {
				times = append(times, at)
			}
			requireWithinBound(t, s, c.Text(), times)
		}
	}
}

func resolveZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := loadLocation(name)
	require.NoError(t, err)
	return loc
}
