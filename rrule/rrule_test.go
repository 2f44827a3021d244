package rrule

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// nextN returns the next n occurrences after at, in UTC RFC 3339.
func nextN(s *Schedule, at time.Time, n int) []string {
	var out []string
	for range n {
		next, ok := s.Next(at)
		if !ok {
			break
		}
		out = append(out, next.UTC().Format(time.RFC3339))
		at = next
	}
	return out
}

func TestParse(t *testing.T) {
	t.Parallel()
	created := utc("2026-03-02T15:04:05Z")
	tests := []struct {
		name  string
		text  string
		zone  string
		after string
		want  []string
		ends  bool // no occurrence after want
	}{
		{
			name: "bare rule anchored at midnight of the creation day",
			text: "FREQ=HOURLY;INTERVAL=2", zone: "Europe/Paris", after: "2026-03-02T15:04:05Z",
			want: []string{"2026-03-02T17:00:00Z", "2026-03-02T19:00:00Z", "2026-03-02T21:00:00Z"},
		},
		{
			name: "bare rule in UTC by default",
			text: "FREQ=DAILY;BYHOUR=6", after: "2026-03-02T15:04:05Z",
			want: []string{"2026-03-03T06:00:00Z", "2026-03-04T06:00:00Z"},
		},
		{
			name: "RRULE line alone",
			text: "RRULE:FREQ=WEEKLY;BYDAY=MO;BYHOUR=9", zone: "America/New_York", after: "2026-03-02T15:04:05Z",
			want: []string{"2026-03-09T13:00:00Z", "2026-03-16T13:00:00Z"},
		},
		{
			name: "documented example",
			text: "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16", after: "2026-03-02T05:30:00Z",
			want: []string{"2026-03-02T15:00:00Z", "2026-03-03T05:00:00Z", "2026-03-03T15:00:00Z"},
		},
		{
			name: "UTC DTSTART ignores the zone option",
			text: "DTSTART:20260101T063000Z\nRRULE:FREQ=DAILY", zone: "Asia/Tokyo", after: "2026-03-02T00:00:00Z",
			want: []string{"2026-03-02T06:30:00Z", "2026-03-03T06:30:00Z"},
		},
		{
			name: "floating DTSTART read in the zone option",
			text: "DTSTART:20260101T063000\nRRULE:FREQ=DAILY", zone: "Asia/Tokyo", after: "2026-03-02T00:00:00Z",
			want: []string{"2026-03-02T21:30:00Z", "2026-03-03T21:30:00Z"},
		},
		{
			name: "DTSTART is not an occurrence unless the rule makes it one",
			text: "DTSTART;TZID=Europe/Paris:20260302T000000\nRRULE:FREQ=DAILY;BYHOUR=6", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-03-02T05:00:00Z", "2026-03-03T05:00:00Z"},
		},
		{
			name: "date-only DTSTART",
			text: "DTSTART;VALUE=DATE:20260301\nRRULE:FREQ=MONTHLY", after: "2026-03-02T00:00:00Z",
			want: []string{"2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"},
		},
		{
			name: "lower case, CRLF, blank lines, folded line",
			text: "dtstart;tzid=Europe/Paris:20260101T000000\r\n\r\nrrule:freq=daily;\r\n byhour=6\r\n", after: "2026-03-02T05:30:00Z",
			want: []string{"2026-03-03T05:00:00Z", "2026-03-04T05:00:00Z"},
		},
		{
			name: "RDATE and EXDATE",
			text: "DTSTART;TZID=Europe/Paris:20260101T060000\nRRULE:FREQ=DAILY\n" +
				"RDATE;TZID=Europe/Paris:20260303T120000,20260305T120000\nEXDATE:20260304T050000Z",
			after: "2026-03-03T00:00:00Z",
			want:  []string{"2026-03-03T05:00:00Z", "2026-03-03T11:00:00Z", "2026-03-05T05:00:00Z", "2026-03-05T11:00:00Z"},
		},
		{
			name: "RDATE only",
			text: "DTSTART:20260101T000000Z\nRDATE:20260401T000000Z,20260301T000000Z", after: "2026-01-01T00:00:00Z",
			want: []string{"2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"}, ends: true,
		},
		{
			name:  "several RRULE lines",
			text:  "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=6\nRRULE:FREQ=WEEKLY;BYDAY=SA,SU;BYHOUR=10",
			after: "2026-03-06T12:00:00Z", // a Friday
			want:  []string{"2026-03-07T09:00:00Z", "2026-03-08T09:00:00Z", "2026-03-09T05:00:00Z"},
		},
		{
			name: "COUNT ends the rule",
			text: "DTSTART:20260301T090000Z\nRRULE:FREQ=DAILY;COUNT=3", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-03-01T09:00:00Z", "2026-03-02T09:00:00Z", "2026-03-03T09:00:00Z"}, ends: true,
		},
		{
			name: "UNTIL is inclusive",
			text: "DTSTART:20260301T090000Z\nRRULE:FREQ=DAILY;UNTIL=20260303T090000Z", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-03-01T09:00:00Z", "2026-03-02T09:00:00Z", "2026-03-03T09:00:00Z"}, ends: true,
		},
		{
			name: "floating UNTIL read in DTSTART's zone",
			text: "DTSTART;TZID=Europe/Paris:20260301T090000\nRRULE:FREQ=DAILY;UNTIL=20260302T090000", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-03-01T08:00:00Z", "2026-03-02T08:00:00Z"}, ends: true,
		},
		{
			name: "last weekday of the month",
			text: "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18", zone: "Europe/Paris", after: "2026-03-02T00:00:00Z",
			want: []string{"2026-03-31T16:00:00Z", "2026-04-30T16:00:00Z", "2026-05-29T16:00:00Z"},
		},
		{
			name: "ISO week 1 with BYWEEKNO",
			text: "DTSTART:20200101T000000Z\nRRULE:FREQ=YEARLY;BYWEEKNO=1;BYDAY=MO", after: "2026-01-01T00:00:00Z",
			want: []string{"2027-01-04T00:00:00Z", "2028-01-03T00:00:00Z", "2029-01-01T00:00:00Z"},
		},
		{
			name: "29 February",
			text: "DTSTART:20000229T120000Z\nRRULE:FREQ=YEARLY", after: "2026-01-01T00:00:00Z",
			want: []string{"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"},
		},
		{
			name: "duplicate values count once",
			text: "DTSTART:20260301T000000Z\nRRULE:FREQ=DAILY;BYHOUR=6,6;COUNT=2", after: "2026-03-01T00:00:00Z",
			want: []string{"2026-03-01T06:00:00Z", "2026-03-02T06:00:00Z"}, ends: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.text, Options{Timezone: tt.zone, Created: created})
			require.NoError(t, err)
			n := len(tt.want)
			if tt.ends {
				n++
			}
			require.Equal(t, tt.want, nextN(s, utc(tt.after), n))
		})
	}
}

// TestFirstPeriod checks the period that holds DTSTART, where RFC 5545
// 3.3.10 is clear and dateutil departs from it: BYSETPOS picks among the
// occurrences of the whole period (for WEEKLY, the week from WKST), and
// only then are those before DTSTART dropped; and a rule whose only
// occurrences lie in that period has occurrences.
func TestFirstPeriod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []string // every occurrence, or the first ones
		ends bool     // want is every occurrence
	}{
		{
			name: "weekly: BYSETPOS counts Monday 1 January, before DTSTART",
			text: "DTSTART:20240102T120000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,SU,SA,TH;BYSETPOS=3,2",
			want: []string{"2024-01-02T12:00:00Z", "2024-01-04T12:00:00Z", "2024-01-09T12:00:00Z", "2024-01-11T12:00:00Z"},
		},
		{
			name: "weekly: the first pick of the week precedes DTSTART and is dropped",
			text: "DTSTART:20260107T090000Z\nRRULE:FREQ=WEEKLY;BYDAY=MO,FR;BYSETPOS=1",
			want: []string{"2026-01-12T09:00:00Z", "2026-01-19T09:00:00Z", "2026-01-26T09:00:00Z"},
		},
		{
			name: "weekly: the week starts on WKST",
			text: "DTSTART:20260107T090000Z\nRRULE:FREQ=WEEKLY;WKST=WE;BYDAY=MO,FR;BYSETPOS=1",
			want: []string{"2026-01-09T09:00:00Z", "2026-01-16T09:00:00Z", "2026-01-23T09:00:00Z"},
		},
		{
			name: "monthly",
			text: "DTSTART:20240115T090000Z\nRRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1,3",
			want: []string{"2024-01-15T09:00:00Z", "2024-02-05T09:00:00Z", "2024-02-19T09:00:00Z"},
		},
		{
			name: "yearly",
			text: "DTSTART:20240301T000000Z\nRRULE:FREQ=YEARLY;BYMONTH=1,3,5;BYMONTHDAY=1;BYSETPOS=1",
			want: []string{"2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		},
		{
			name: "daily",
			text: "DTSTART:20240301T120000Z\nRRULE:FREQ=DAILY;BYHOUR=6,12,18;BYSETPOS=1,2",
			want: []string{"2024-03-01T12:00:00Z", "2024-03-02T06:00:00Z", "2024-03-02T12:00:00Z"},
		},
		{
			name: "hourly",
			text: "DTSTART:20240301T103000Z\nRRULE:FREQ=HOURLY;BYMINUTE=0,30,45;BYSETPOS=1,-2",
			want: []string{"2024-03-01T10:30:00Z", "2024-03-01T11:00:00Z", "2024-03-01T11:30:00Z"},
		},
		{
			name: "minutely",
			text: "DTSTART:20240301T100020Z\nRRULE:FREQ=MINUTELY;BYSECOND=10,20,30;BYSETPOS=2",
			want: []string{"2024-03-01T10:00:20Z", "2024-03-01T10:01:20Z"},
		},
		{
			name: "COUNT counts from DTSTART, after BYSETPOS",
			text: "DTSTART:20240102T120000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,SU,SA,TH;BYSETPOS=3,2;COUNT=3",
			want: []string{"2024-01-02T12:00:00Z", "2024-01-04T12:00:00Z", "2024-01-09T12:00:00Z"}, ends: true,
		},
		{
			name: "the only occurrence is DTSTART (29 February)",
			text: "DTSTART:20120229T120000Z\nRRULE:FREQ=YEARLY;UNTIL=20140301T115959Z",
			want: []string{"2012-02-29T12:00:00Z"}, ends: true,
		},
		{
			name: "UNTIL equals DTSTART",
			text: "DTSTART:19970902T090000\nRRULE:FREQ=DAILY;UNTIL=19970902T090000",
			want: []string{"1997-09-02T09:00:00Z"}, ends: true,
		},
		{
			name: "the only occurrences lie in DTSTART's week",
			text: "DTSTART:20260107T090000Z\nRRULE:FREQ=WEEKLY;BYDAY=WE,FR;UNTIL=20260110T000000Z",
			want: []string{"2026-01-07T09:00:00Z", "2026-01-09T09:00:00Z"}, ends: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.text, Options{})
			require.NoError(t, err)
			n := len(tt.want)
			if tt.ends {
				n++
			}
			require.Equal(t, tt.want, nextN(s, utc("1990-01-01T00:00:00Z"), n))
		})
	}
}

// TestDateStartIgnoresTimeParts checks RFC 5545 3.3.10: with a DATE
// DTSTART, BYHOUR, BYMINUTE and BYSECOND are ignored.
func TestDateStartIgnoresTimeParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"DTSTART;VALUE=DATE:20260105\nRRULE:FREQ=DAILY;BYHOUR=5;COUNT=3",
			[]string{"2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z", "2026-01-07T00:00:00Z"}},
		{"DTSTART;VALUE=DATE:20260105\nRRULE:FREQ=WEEKLY;BYHOUR=5,6;BYMINUTE=30;BYSECOND=1,2;COUNT=2",
			[]string{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z"}},
		{"DTSTART;VALUE=DATE:20241018\nRRULE:FREQ=DAILY;BYMINUTE=1,2,3,4;INTERVAL=2;COUNT=3",
			[]string{"2024-10-18T00:00:00Z", "2024-10-20T00:00:00Z", "2024-10-22T00:00:00Z"}},
	}
	for _, tt := range tests {
		s, err := Parse(tt.text, Options{})
		require.NoError(t, err, tt.text)
		require.Equal(t, tt.want, nextN(s, utc("2000-01-01T00:00:00Z"), len(tt.want)+1), tt.text)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		zone string
		want string
	}{
		{"FREQ=DAILY", "Mars/Base", `unknown time zone "Mars/Base"`},
		{"FREQ=DAILY", "Local", `unknown time zone "Local"`},
		{"DTSTART;TZID=Mars/Base:20260101T000000\nRRULE:FREQ=DAILY", "", `DTSTART: unknown time zone "Mars/Base"`},
		{"FREQ=SOMETIMES", "", "FREQ=SOMETIMES: unknown frequency (want YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY, MINUTELY or SECONDLY)"},
		{"FREQ=DAILY;BYHOUR=25", "", "BYHOUR=25: must be between 0 and 23"},
		{"FREQ=DAILY;BYHOUR=6,25", "", "BYHOUR=25: must be between 0 and 23"},
		{"FREQ=DAILY;BYMINUTE=60", "", "BYMINUTE=60: must be between 0 and 59"},
		{"FREQ=DAILY;BYSECOND=60", "", "BYSECOND=60: must be between 0 and 59"},
		{"FREQ=MONTHLY;BYMONTHDAY=0", "", "BYMONTHDAY=0: must be between 1 and 31 or -31 and -1"},
		{"FREQ=MONTHLY;BYMONTHDAY=-32", "", "BYMONTHDAY=-32: must be between 1 and 31 or -31 and -1"},
		{"FREQ=YEARLY;BYMONTH=13", "", "BYMONTH=13: must be between 1 and 12"},
		{"FREQ=YEARLY;BYYEARDAY=367", "", "BYYEARDAY=367: must be between 1 and 366 or -366 and -1"},
		{"FREQ=YEARLY;BYWEEKNO=54", "", "BYWEEKNO=54: must be between 1 and 53 or -53 and -1"},
		{"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=0", "", "BYSETPOS=0: must be between 1 and 366 or -366 and -1"},
		{"FREQ=DAILY;BYHOUR=six", "", "BYHOUR=SIX: not a number"},
		{"FREQ=DAILY;INTERVAL=0", "", "INTERVAL=0: must be between 1 and 1000000"},
		{"FREQ=DAILY;COUNT=0", "", "COUNT=0: must be between 1 and 100000"},
		{"FREQ=DAILY;COUNT=2000000", "", "COUNT=2000000: must be between 1 and 100000"},
		{"FREQ=DAILY;FREQ=WEEKLY", "", "FREQ: given more than once"},
		{"FREQ=DAILY;BYHOUR=", "", "BYHOUR=: empty value"},
		{"FREQ=DAILY;BYEASTER=0", "", "BYEASTER=0: unknown rule part"},
		{"FREQ=DAILY;DTSTART=20260101T000000", "", "DTSTART=20260101T000000: unknown rule part"},
		{"FREQ=DAILY;HOURLY", "", `"HOURLY": want NAME=VALUE, e.g. FREQ=DAILY`},
		{"BYHOUR=6", "", "rule has no FREQ (e.g. FREQ=DAILY)"},
		{"FREQ=WEEKLY;BYDAY=XX", "", "BYDAY=XX: unknown weekday (want MO, TU, WE, TH, FR, SA or SU)"},
		{"FREQ=MONTHLY;BYDAY=0MO", "", "BYDAY=0MO: the position must be between 1 and 53 or -53 and -1"},
		{"FREQ=MONTHLY;BYDAY=6MO", "", "BYDAY=6MO: with FREQ=MONTHLY the position must be between 1 and 5 or -5 and -1"},
		{"FREQ=WEEKLY;BYDAY=1MO", "", "BYDAY=1MO: a position (like 1MO) is only allowed with FREQ=MONTHLY or FREQ=YEARLY"},
		{"FREQ=MONTHLY;BYDAY=MO,1FR", "", "BYDAY=MO,1FR: mixing weekdays with and without a position is not supported; use BYSETPOS or several RRULE lines"},
		{"FREQ=YEARLY;BYWEEKNO=1;BYDAY=1MO", "", "BYDAY=1MO: a position (like 1MO) is not allowed together with BYWEEKNO"},
		{"FREQ=WKST;WKST=XX", "", "FREQ=WKST: unknown frequency (want YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY, MINUTELY or SECONDLY)"},
		{"FREQ=DAILY;WKST=XX", "", "WKST=XX: unknown weekday (want MO, TU, WE, TH, FR, SA or SU)"},
		{"FREQ=MONTHLY;BYWEEKNO=1", "", "BYWEEKNO=1: only allowed with FREQ=YEARLY"},
		{"FREQ=MONTHLY;BYYEARDAY=1", "", "BYYEARDAY=1: not allowed with FREQ=MONTHLY"},
		{"FREQ=WEEKLY;BYMONTHDAY=1", "", "BYMONTHDAY=1: not allowed with FREQ=WEEKLY"},
		{"FREQ=DAILY;BYSETPOS=1", "", "BYSETPOS=1: needs another BYxxx rule part to pick from"},
		{"FREQ=DAILY;COUNT=3;UNTIL=20260101T000000Z", "", "COUNT and UNTIL: only one of them may be given"},
		{"FREQ=DAILY;UNTIL=2026-01-01", "", `UNTIL=2026-01-01: "2026-01-01": want a date-time YYYYMMDDTHHMMSS, with Z for UTC, or a date YYYYMMDD`},
		{"FREQ=DAILY;UNTIL=20260101", "", "UNTIL=20260101: must be a date-time like 20260101T235959Z, since DTSTART has a time"},
		{"DTSTART:20260230T000000\nRRULE:FREQ=DAILY", "", `DTSTART: "20260230T000000": no such date or time`},
		{"DTSTART:2026-01-01T00:00:00Z\nRRULE:FREQ=DAILY", "", `DTSTART: "2026-01-01T00:00:00Z": want a date-time YYYYMMDDTHHMMSS, with Z for UTC, or a date YYYYMMDD`},
		{"DTSTART;TZID=Europe/Paris:20260101T000000Z\nRRULE:FREQ=DAILY", "", `DTSTART: "20260101T000000Z": a value with TZID must not end in Z`},
		{"DTSTART;FOO=bar:20260101T000000\nRRULE:FREQ=DAILY", "", "DTSTART: unsupported parameter FOO"},
		{"DTSTART:20260101T000000\nDTSTART:20260102T000000\nRRULE:FREQ=DAILY", "", "DTSTART: given more than once (lines 1 and 2)"},
		{"DTSTART:20260101T000000", "", "schedule has no RRULE or RDATE"},
		{"", "", "schedule is empty"},
		{"DTSTART:20260101T000000\nFREQ=DAILY", "", `line 2: "FREQ=DAILY": a bare rule must be alone; write RRULE:FREQ=DAILY`},
		{"DTSTART:20260101T000000\nEXRULE:FREQ=DAILY", "", "line 2: EXRULE: unsupported property (want DTSTART, RRULE, RDATE or EXDATE)"},
		{"DTSTART:20260101T000000\nRDATE;VALUE=PERIOD:20260101T000000Z/PT1H", "", "RDATE: VALUE=PERIOD is not supported (want DATE-TIME or DATE)"},
		{"DTSTART:20260101T000000\nRRULE:FREQ=DAILY\nRRULE:FREQ=DAILY;BYHOUR=24", "", "RRULE on line 3: BYHOUR=24: must be between 0 and 23"},
		{"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "", "rule has no occurrence"},
		{"FREQ=MONTHLY;BYMONTHDAY=31;BYMONTH=4,6,9,11", "", "rule has no occurrence"},
		{"DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;UNTIL=20251231T000000Z", "", "rule has no occurrence"},
		{"FREQ=HOURLY;INTERVAL=24;BYHOUR=5", "", "rule has no occurrence: with FREQ=HOURLY;INTERVAL=24 from DTSTART, BYHOUR=5 is never reached"},
		{"FREQ=MINUTELY;INTERVAL=2;BYMINUTE=1,3,5", "", "rule has no occurrence: with FREQ=MINUTELY;INTERVAL=2 from DTSTART, BYMINUTE=1,3,5 is never reached"},
		{"FREQ=HOURLY;BYMINUTE=0;BYSETPOS=2", "", "rule has no occurrence: BYSETPOS=2 picks nothing, as each HOURLY period holds 1 occurrence(s)"},
		{"DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=1\nEXDATE:20260101T000000Z", "", "rule has no occurrence: EXDATE removes every occurrence"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.text, Options{Timezone: tt.zone, Created: utc("2026-01-01T12:00:00Z")})
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestNoOccurrenceIsErrNoOccurrence(t *testing.T) {
	t.Parallel()
	_, err := Parse("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", Options{})
	require.ErrorIs(t, err, ErrNoOccurrence)
	_, err = Parse("FREQ=HOURLY;INTERVAL=2;BYHOUR=1", Options{})
	require.ErrorIs(t, err, ErrNoOccurrence)
	// A period never holds the entry BYSETPOS asks for: known without
	// walking to year 9999, even for a COUNT rule.
	for _, text := range []string{
		"DTSTART:20260101T020000Z\nRRULE:FREQ=WEEKLY;BYHOUR=2;BYSETPOS=3",
		"DTSTART:20260101T020000Z\nRRULE:FREQ=MONTHLY;BYMONTH=3;BYSETPOS=2;COUNT=70",
		"DTSTART:20260101T020000Z\nRRULE:FREQ=YEARLY;BYDAY=1MO;BYSETPOS=-2",
		"DTSTART:20260101T020000Z\nRRULE:FREQ=WEEKLY;BYMONTH=1,2;BYHOUR=1;BYSETPOS=8",
	} {
		_, err = Parse(text, Options{Limits: Limits{MaxParseSteps: 2000}})
		require.ErrorIs(t, err, ErrNoOccurrence, text)
	}
}

// TestDST checks the days the clocks change, against RFC 5545 3.3.5: a
// local time in a gap takes the offset from before the gap, and a repeated
// local time runs once, at its first occurrence.
func TestDST(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		after string
		want  []string
	}{
		{
			name: "Europe spring: 02:30 does not exist and runs at 03:30 CEST",
			text: "DTSTART;TZID=Europe/Paris:20260101T023000\nRRULE:FREQ=DAILY", after: "2026-03-27T12:00:00Z",
			want: []string{"2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"},
		},
		{
			name: "Europe autumn: 02:30 occurs twice and runs at the first, CEST",
			text: "DTSTART;TZID=Europe/Paris:20260101T023000\nRRULE:FREQ=DAILY", after: "2026-10-23T12:00:00Z",
			want: []string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		},
		{
			name: "America spring: 02:30 does not exist and runs at 03:30 EDT",
			text: "DTSTART;TZID=America/New_York:20260101T023000\nRRULE:FREQ=DAILY", after: "2026-03-06T12:00:00Z",
			want: []string{"2026-03-07T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"},
		},
		{
			name: "America autumn: 01:30 occurs twice and runs at the first, EDT",
			text: "DTSTART;TZID=America/New_York:20260101T013000\nRRULE:FREQ=DAILY", after: "2026-10-30T12:00:00Z",
			want: []string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		},
		{
			name: "hourly over the Europe spring gap: 02:00 and 03:00 share an instant",
			text: "DTSTART;TZID=Europe/Paris:20260328T000000\nRRULE:FREQ=HOURLY", after: "2026-03-29T00:30:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T03:00:00Z"},
		},
		{
			name: "hourly over the Europe autumn fold: the repeated hour runs once",
			text: "DTSTART;TZID=Europe/Paris:20261024T000000\nRRULE:FREQ=HOURLY", after: "2026-10-24T22:30:00Z",
			want: []string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"},
		},
		{
			name: "a time in the gap lands after the next one on the time line",
			// Local 02:15 (in the gap) is 01:15Z, 03:00 is 01:00Z.
			text: "DTSTART;TZID=Europe/Paris:20260329T000000\nRRULE:FREQ=MINUTELY;INTERVAL=45", after: "2026-03-28T23:50:00Z",
			want: []string{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z", "2026-03-29T01:45:00Z", "2026-03-29T02:30:00Z"},
		},
		{
			name: "midnight gap (Sao Paulo 2018)",
			text: "DTSTART;TZID=America/Sao_Paulo:20181101T000000\nRRULE:FREQ=DAILY", after: "2018-11-02T12:00:00Z",
			want: []string{"2018-11-03T03:00:00Z", "2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z"},
		},
		{
			name: "half-hour gap (Lord Howe)",
			text: "DTSTART;TZID=Australia/Lord_Howe:20261001T021500\nRRULE:FREQ=DAILY", after: "2026-10-02T12:00:00Z",
			want: []string{"2026-10-02T15:45:00Z", "2026-10-03T15:45:00Z", "2026-10-04T15:15:00Z"},
		},
		{
			name: "bare rule anchored in the zone across the spring change",
			text: "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", after: "2026-03-27T12:00:00Z",
			want: []string{"2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.text, Options{Timezone: "Europe/Paris", Created: utc("2026-01-10T12:00:00Z")})
			require.NoError(t, err)
			require.Equal(t, tt.want, nextN(s, utc(tt.after), len(tt.want)))
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	paris, err := loadLocation("Europe/Paris")
	require.NoError(t, err)
	tests := []struct {
		wall    string
		want    string
		missing bool
	}{
		{"2026-03-29T01:59:59Z", "2026-03-29T00:59:59Z", false},
		{"2026-03-29T02:00:00Z", "2026-03-29T01:00:00Z", true},
		{"2026-03-29T02:59:59Z", "2026-03-29T01:59:59Z", true},
		{"2026-03-29T03:00:00Z", "2026-03-29T01:00:00Z", false},
		{"2026-10-25T01:59:59Z", "2026-10-24T23:59:59Z", false},
		{"2026-10-25T02:00:00Z", "2026-10-25T00:00:00Z", false},
		{"2026-10-25T02:59:59Z", "2026-10-25T00:59:59Z", false},
		{"2026-10-25T03:00:00Z", "2026-10-25T02:00:00Z", false},
	}
	for _, tt := range tests {
		got := resolve(paris, utc(tt.wall).Unix())
		require.Equal(t, utc(tt.want), time.Unix(got.unix, 0).UTC(), tt.wall)
		require.Equal(t, tt.missing, got.gapEnd != 0, tt.wall)
		if tt.missing {
			require.Equal(t, utc("2026-03-29T03:00:00Z").Unix(), got.gapEnd)
		}
	}
}

func TestFirst(t *testing.T) {
	t.Parallel()
	s, err := Parse("DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY", Options{})
	require.NoError(t, err)
	at := utc("2026-03-02T06:00:00Z")

	got, ok := s.First(at)
	require.True(t, ok)
	require.Equal(t, at, got.UTC(), "an occurrence is at or after itself")

	got, ok = s.Next(at)
	require.True(t, ok)
	require.Equal(t, utc("2026-03-03T06:00:00Z"), got.UTC(), "but not strictly after")

	got, ok = s.First(at.Add(time.Nanosecond))
	require.True(t, ok)
	require.Equal(t, utc("2026-03-03T06:00:00Z"), got.UTC())

	got, ok = s.Next(at.Add(-time.Nanosecond))
	require.True(t, ok)
	require.Equal(t, at, got.UTC())

	got, ok = s.First(utc("1900-01-01T00:00:00Z"))
	require.True(t, ok)
	require.Equal(t, utc("2026-01-01T06:00:00Z"), got.UTC(), "the first occurrence is DTSTART")

	require.Equal(t, time.UTC, s.Location())
}

func TestNextReturnsScheduleZone(t *testing.T) {
	t.Parallel()
	s, err := Parse("DTSTART;TZID=Europe/Paris:20260101T060000\nRRULE:FREQ=DAILY", Options{Timezone: "America/New_York"})
	require.NoError(t, err)
	got, ok := s.Next(utc("2026-03-02T00:00:00Z"))
	require.True(t, ok)
	require.Equal(t, "2026-03-02T06:00:00+01:00", got.Format(time.RFC3339))
	require.Equal(t, "Europe/Paris", s.Location().String())
}

func TestEnded(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"DTSTART:20200101T000000Z\nRRULE:FREQ=MINUTELY;COUNT=100000",
		"DTSTART:20200101T000000Z\nRRULE:FREQ=MINUTELY;UNTIL=20200201T000000Z",
	} {
		s, err := Parse(text, Options{})
		require.NoError(t, err)
		_, ok := s.Next(utc("2026-01-01T00:00:00Z"))
		require.False(t, ok, text)
		_, ok = s.First(utc("2026-01-01T00:00:00Z"))
		require.False(t, ok, text)
		got, ok := s.Next(utc("2020-01-15T10:00:30Z"))
		require.True(t, ok, text)
		require.Equal(t, utc("2020-01-15T10:01:00Z"), got.UTC(), text)
	}
	s, err := Parse("DTSTART:20200101T000000Z\nRRULE:FREQ=MINUTELY;COUNT=100000", Options{})
	require.NoError(t, err)
	last := utc("2020-01-01T00:00:00Z").Add(99999 * time.Minute)
	got, ok := s.Next(last.Add(-time.Second))
	require.True(t, ok)
	require.Equal(t, last, got.UTC())
	_, ok = s.Next(last)
	require.False(t, ok)
}

func TestParseCache(t *testing.T) {
	t.Parallel()
	text := "FREQ=HOURLY;INTERVAL=7;BYMINUTE=13"
	a, err := Parse(text, Options{Timezone: "Europe/Paris", Created: utc("2026-03-02T10:00:00Z")})
	require.NoError(t, err)
	b, err := Parse(text, Options{Timezone: "Europe/Paris", Created: utc("2026-03-02T22:00:00Z")})
	require.NoError(t, err)
	require.Same(t, a, b, "same anchor day in the zone")
	c, err := Parse(text, Options{Timezone: "Europe/Paris", Created: utc("2026-03-02T23:30:00Z")})
	require.NoError(t, err)
	require.NotSame(t, a, c, "next day in Paris")
	d, err := Parse(text, Options{Timezone: "UTC", Created: utc("2026-03-02T10:00:00Z")})
	require.NoError(t, err)
	require.NotSame(t, a, d, "other zone")

	withStart := "DTSTART:20260101T000000\nRRULE:FREQ=HOURLY;INTERVAL=7;BYMINUTE=13"
	e, err := Parse(withStart, Options{Timezone: "Europe/Paris", Created: utc("2026-03-02T10:00:00Z")})
	require.NoError(t, err)
	f, err := Parse(withStart, Options{Timezone: "Europe/Paris", Created: utc("2027-03-02T10:00:00Z")})
	require.NoError(t, err)
	require.Same(t, e, f, "the creation day does not matter with DTSTART")

	_, err1 := Parse("FREQ=DAILY;BYHOUR=99", Options{})
	_, err2 := Parse("FREQ=DAILY;BYHOUR=99", Options{})
	require.Error(t, err1)
	require.Equal(t, err1, err2)
}

func TestParseCacheBounded(t *testing.T) {
	t.Parallel()
	s, err := Parse("FREQ=DAILY", Options{})
	require.NoError(t, err)
	size := entryBytes(cacheKey{text: "0"}, s)
	c := newParseCache(100 * size)
	for i := range 300 {
		c.put(cacheKey{text: fmt.Sprint(i % 10)}, s)
		c.put(cacheKey{text: fmt.Sprint(i)}, s)
		// Keep using key 0: it must survive.
		_, ok := c.get(cacheKey{text: "0"})
		require.True(t, ok, "entry 0 after %d puts", i)
		require.LessOrEqual(t, c.bytes(), 2*100*size)
	}
	_, ok := c.get(cacheKey{text: "150"})
	require.False(t, ok, "an unused entry ages out")

	big := newParseCache(size / 2)
	big.put(cacheKey{text: "0"}, s)
	_, ok = big.get(cacheKey{text: "0"})
	require.False(t, ok, "an entry larger than a generation is not kept")
}

func TestParseCacheKeepsNoRefusal(t *testing.T) {
	t.Parallel()
	text := "FREQ=DAILY;BYHOUR=6;BYMONTH=13"
	_, err := Parse(text, Options{})
	require.Error(t, err)
	_, ok := schedules.get(cacheKey{text: text, limits: DefaultLimits})
	require.False(t, ok)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	texts := []string{
		"FREQ=HOURLY;INTERVAL=2",
		"FREQ=DAILY;BYHOUR=6,16",
		"DTSTART:20200101T000000Z\nRRULE:FREQ=MINUTELY;COUNT=5000",
		"FREQ=MONTHLY;BYDAY=-1FR",
	}
	want := make([][]string, len(texts))
	at := utc("2026-03-02T10:00:00Z")
	for i, text := range texts {
		s, err := Parse(text, Options{Timezone: "Europe/Paris", Created: at})
		require.NoError(t, err)
		want[i] = nextN(s, at, 5)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for j := range 200 {
				i := (g + j) % len(texts)
				s, err := Parse(texts[i], Options{Timezone: "Europe/Paris", Created: at})
				if err != nil || fmt.Sprint(nextN(s, at, 5)) != fmt.Sprint(want[i]) {
					t.Errorf("goroutine %d: %s: got %v, %v", g, texts[i], err, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLongCount checks a long COUNT rule.
func TestLongCount(t *testing.T) {
	t.Parallel()
	s, err := Parse("DTSTART:20260101T000000Z\nRRULE:FREQ=SECONDLY;COUNT=1000000", Options{Limits: Limits{MaxCount: 1_000_000}})
	require.NoError(t, err)
	start := utc("2026-01-01T00:00:00Z")
	last := start.Add(999999 * time.Second)
	for i := range 500 {
		at := start.Add(time.Duration(i*1900+i%7) * time.Second).Add(time.Second / 3)
		got, ok := s.Next(at)
		require.True(t, ok)
		require.Equal(t, at.Truncate(time.Second).Add(time.Second), got.UTC())
	}
	got, ok := s.Next(last.Add(-time.Second))
	require.True(t, ok)
	require.Equal(t, last, got.UTC())
	_, ok = s.Next(last)
	require.False(t, ok)
}

func TestNextDoesNotAllocate(t *testing.T) {
	texts := []string{
		"DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16\nEXDATE;TZID=Europe/Paris:20260302T060000",
		"DTSTART;TZID=America/New_York:20200101T000000\nRRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,-1,-2,-3",
		"DTSTART;TZID=Europe/Paris:20200101T000000\nRRULE:FREQ=YEARLY;BYWEEKNO=1,27;BYDAY=MO;BYHOUR=8\nRDATE:20260401T000000Z",
		"DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=SECONDLY;INTERVAL=7;BYHOUR=2;BYMINUTE=30;COUNT=1000",
	}
	for _, text := range texts {
		s, err := Parse(text, Options{})
		require.NoError(t, err)
		at := utc("2026-03-29T00:30:00Z")
		allocs := testing.AllocsPerRun(100, func() {
			s.Next(at)
			s.First(at)
		})
		require.Zero(t, allocs, text)
	}
}
