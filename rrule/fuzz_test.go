package rrule

import (
	"testing"
	"time"
)

// FuzzParse checks that no text makes Parse, Next or First panic, and that
// Next moves forward.
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
	} {
		f.Add(s, "Europe/Paris", int64(1772400000), int64(1780000000))
	}
	f.Fuzz(func(t *testing.T, text, zone string, created, at int64) {
		s, err := Parse(text, Options{Timezone: zone, Created: time.Unix(created%(1<<40), 0)})
		if err != nil {
			return
		}
		q := time.Unix(at%(1<<40), 0)
		for range 3 {
			next, ok := s.Next(q)
			if !ok {
				break
			}
			if !next.After(q) {
				t.Fatalf("Next(%v) = %v, not after", q, next)
			}
			if first, ok := s.First(next); !ok || !first.Equal(next) {
				t.Fatalf("First(%v) = %v, %v", next, first, ok)
			}
			q = next
		}
	})
}
