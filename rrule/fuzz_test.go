package rrule

import (
	"testing"
	"time"
)

// FuzzParse checks that no text makes Parse, Next or First panic, that
// Next moves forward, and that no search of an accepted schedule takes
// more steps than the bound Parse computed, itself within Limits.MaxSteps.
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
	} {
		f.Add(s, "Europe/Paris", int64(1772400000), int64(1780000000))
	}
	f.Fuzz(func(t *testing.T, text, zone string, created, at int64) {
		s, err := Parse(text, Options{Timezone: zone, Created: time.Unix(created%(1<<40), 0)})
		if err != nil {
			return
		}
		if s.bound > DefaultLimits.MaxSteps {
			t.Fatalf("bound %d above the limit %d", s.bound, DefaultLimits.MaxSteps)
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
