package rrule

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse checks that no text makes Parse, Next or First panic, that
// Next moves forward, that no search of an accepted schedule takes more
// steps than the bound Parse computed, itself within Limits.MaxSteps, and
// that Parse of an accepted schedule counts at most Limits.MaxParseSteps,
// exactly: the schedule is accepted with the steps it took as the limit,
// and refused for MaxParseSteps with one fewer.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"FREQ=HOURLY;INTERVAL=2",
		"DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
		"DTSTART:20200101T000000Z\nRRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;COUNT=40",
		"DTSTART:20200101T000000\nRRULE:FREQ=YEARLY;BYWEEKNO=-1,1,53;BYDAY=SU;WKST=SU\nEXDATE:20201227T000000",
		"DTSTART;VALUE=DATE:20200229\nRRULE:FREQ=YEARLY;BYYEARDAY=-1,366;UNTIL=20400101\nRDATE:20300101T000000Z",
		"FREQ=SECONDLY;INTERVAL=7;BYMINUTE=1,2;BYSECOND=3",
		"FREQ=MINUTELY;BYHOUR=2;BYMONTHDAY=-1;BYMONTH=3",
		"DTSTART;TZID=\"America/New_York\":99991231T235959\nRRULE:FREQ=WEEKLY;BYMONTH=12",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=265;BYMONTH=2;BYMONTHDAY=29",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=2999;BYHOUR=3;BYDAY=MO",
		"DTSTART:20260105T000000Z\nRRULE:FREQ=WEEKLY;INTERVAL=85;BYMONTH=2;BYDAY=MO,TU,WE,TH,FR,SA,SU;BYSETPOS=7",
		"DTSTART;TZID=Pacific/Apia:20111228T120000\nRRULE:FREQ=HOURLY;INTERVAL=5\nEXDATE;TZID=Pacific/Apia:20111231T010000",
		"DTSTART;TZID=Europe/Paris:20260329T000000\nRRULE:FREQ=MINUTELY;INTERVAL=45;BYHOUR=2,3",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=17;BYMONTH=2;BYMONTHDAY=29",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYMONTH=6,7,8;BYDAY=SA\nRRULE:FREQ=WEEKLY;INTERVAL=3;BYMONTH=6;BYDAY=SU",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYSECOND=1,2,3\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYSECOND=1,2,3;BYMINUTE=5",
		"DTSTART:20260107T101500Z\nRRULE:FREQ=DAILY;BYDAY=MO,WE,FR;BYHOUR=9,17;COUNT=3001\nEXDATE:20260107T170000Z,20260109T090000Z",
	} {
		f.Add(s, "Europe/Paris", int64(1772400000), int64(1780000000))
	}
	f.Fuzz(func(t *testing.T, text, zone string, created, at int64) {
		opt := Options{Timezone: zone, Created: time.Unix(created%(1<<40), 0)}
		s, err := Parse(text, opt)
		if err != nil {
			return
		}
		if s.bound > DefaultLimits.MaxSteps {
			t.Fatalf("bound %d above the limit %d", s.bound, DefaultLimits.MaxSteps)
		}
		if s.parseSteps > DefaultLimits.MaxParseSteps {
			t.Fatalf("Parse took %d steps, above the limit %d", s.parseSteps, DefaultLimits.MaxParseSteps)
		}
		opt.Limits.MaxParseSteps = s.parseSteps
		if exact, err := Parse(text, opt); err != nil || exact.parseSteps != s.parseSteps {
			t.Fatalf("with MaxParseSteps %d: %v", s.parseSteps, err)
		}
		opt.Limits.MaxParseSteps--
		var le *LimitError
		if _, err := Parse(text, opt); !errors.As(err, &le) || le.Limit != "MaxParseSteps" {
			t.Fatalf("with MaxParseSteps %d: %v, want a refusal for MaxParseSteps", opt.Limits.MaxParseSteps, err)
		}
		q := at % (1 << 40)
		for range 3 {
			next, ok, steps := s.nextSteps(q)
			if steps > s.bound {
				t.Fatalf("Next(%d) took %d steps, above the bound %d", q, steps, s.bound)
			}
			if !ok {
				break
			}
			if next <= q {
				t.Fatalf("Next(%d) = %d, not after", q, next)
			}
			if first, ok := s.First(time.Unix(next, 0)); !ok || first.Unix() != next {
				t.Fatalf("First(%d) = %v, %v", next, first, ok)
			}
			q = next
		}
	})
}
