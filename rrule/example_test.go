package rrule_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/freshen-dev/freshen/rrule"
)

func ExampleParse() {
	s, err := rrule.Parse("DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16", rrule.Options{})
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t, _ = s.Next(t)
		fmt.Println(t.Format(time.RFC3339), t.UTC().Format(time.RFC3339))
	}
	// Output:
	// 2026-03-28T16:00:00+01:00 2026-03-28T15:00:00Z
	// 2026-03-29T06:00:00+02:00 2026-03-29T04:00:00Z
	// 2026-03-29T16:00:00+02:00 2026-03-29T14:00:00Z
}

// A bare rule starts at 00:00 of the creation day in the zone.
func ExampleParse_bareRule() {
	s, err := rrule.Parse("FREQ=HOURLY;INTERVAL=2", rrule.Options{
		Timezone: "Europe/Paris",
		Created:  time.Date(2026, 3, 2, 9, 41, 0, 0, time.UTC),
	})
	if err != nil {
		panic(err)
	}
	t, _ := s.First(time.Date(2026, 3, 2, 9, 41, 0, 0, time.UTC))
	fmt.Println(t.Format(time.RFC3339))
	// Output: 2026-03-02T12:00:00+01:00
}

// The clocks go from 02:00 to 03:00 in Paris on 29 March 2026, so 02:30
// does not exist that day and runs at 03:30; on 25 October they go back
// from 03:00 to 02:00, and 02:30 runs once, the first time.
func ExampleSchedule_Next_daylightSaving() {
	s, err := rrule.Parse("DTSTART;TZID=Europe/Paris:20260101T023000\nRRULE:FREQ=DAILY", rrule.Options{})
	if err != nil {
		panic(err)
	}
	for _, day := range []time.Time{
		time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC),
	} {
		t, _ := s.Next(day)
		fmt.Println(t.Format(time.RFC3339), t.UTC().Format(time.RFC3339))
	}
	// Output:
	// 2026-03-29T03:30:00+02:00 2026-03-29T01:30:00Z
	// 2026-10-25T02:30:00+02:00 2026-10-25T00:30:00Z
}

func ExampleParse_error() {
	_, err := rrule.Parse("FREQ=DAILY;BYHOUR=25", rrule.Options{})
	fmt.Println(err)
	// Output: BYHOUR=25: must be between 0 and 23
}

// MinGap measures how close together a schedule's occurrences come: here
// the spring change in Paris puts 01:00 and 03:00 one hour apart.
func ExampleSchedule_MinGap() {
	s, err := rrule.Parse("DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=1,3", rrule.Options{})
	if err != nil {
		panic(err)
	}
	gap, _ := s.MinGap(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 1000)
	fmt.Println(gap)
	// Output: 1h0m0s
}

// A schedule beyond a limit is refused with a *LimitError naming the
// limit.
func ExampleLimitError() {
	_, err := rrule.Parse("DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY\nRRULE:FREQ=WEEKLY", rrule.Options{Limits: rrule.Limits{MaxRules: 1}})
	var le *rrule.LimitError
	if errors.As(err, &le) {
		fmt.Println(le.Limit+":", err)
	}
	// Output: MaxRules: RRULE: at most 1 rules per schedule, got 2
}

// A schedule without DTSTART starts on its model's creation day; Reanchor
// moves a parsed one to another day without reading the text again.
func ExampleSchedule_Reanchor() {
	s, err := rrule.Parse("FREQ=DAILY;INTERVAL=3;BYHOUR=9", rrule.Options{Created: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		panic(err)
	}
	r, err := s.Reanchor(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	a, _ := s.Next(at)
	b, _ := r.Next(at)
	fmt.Println(s.Anchored(), a.Format(time.RFC3339), b.Format(time.RFC3339))
	// Output: true 2026-03-04T09:00:00Z 2026-03-05T09:00:00Z
}
