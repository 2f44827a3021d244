package rrule

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Reasons why libical and we expand some rules differently. In each case
// RFC 5545 does not settle the question and we do as python-dateutil and
// rrule-go do (see the package documentation).
const (
	weekNoWithoutDay = "BYWEEKNO without BYDAY: libical takes the weekday from DTSTART; " +
		"we, like dateutil, take every day of the numbered weeks"
	weekNoInterval = "BYWEEKNO with INTERVAL: libical counts INTERVAL in ISO week-numbering years " +
		"(a DTSTART in week 53 of the year before starts the count there); we, like dateutil, " +
		"count calendar years and give each year the days of its numbered weeks that fall in it"
	yearlyMonthDay = "FREQ=YEARLY with BYMONTHDAY and no BYMONTH: libical takes the month from DTSTART; " +
		"we, like dateutil, take every month"
)

// libicalDiffers lists the cases of libicalCases (by line) where we
// expand differently from libical, and why.
var libicalDiffers = map[int]string{
	273: weekNoWithoutDay,
	516: weekNoWithoutDay,
	521: weekNoWithoutDay,
	526: weekNoWithoutDay,
	531: weekNoWithoutDay,
	536: weekNoWithoutDay,
	541: weekNoWithoutDay,
	546: weekNoWithoutDay,
	551: weekNoWithoutDay,
	556: weekNoWithoutDay,
	561: weekNoWithoutDay,
	661: weekNoWithoutDay,
	720: weekNoWithoutDay,
	725: weekNoInterval,
	730: weekNoInterval,
	740: weekNoInterval,
	390: yearlyMonthDay,
	395: yearlyMonthDay,
	405: "libical does not implement this rule (its expected result is an error), so there is nothing to compare",
}

// libicalValue formats an occurrence the way the case writes its DTSTART:
// a date, a UTC date-time with Z, or a floating date-time (read in UTC).
func libicalValue(t time.Time, dtstart string) string {
	switch {
	case len(dtstart) == 8:
		return t.UTC().Format("20060102")
	case strings.HasSuffix(dtstart, "Z"):
		return t.UTC().Format("20060102T150405Z")
	default:
		return t.UTC().Format("20060102T150405")
	}
}

// libicalRun returns the occurrences of rule from dtstart on, at or after
// from when it is not "", formatted as libical writes them.
func libicalRun(rule, dtstart, from string) ([]string, error) {
	start := "DTSTART:" + dtstart
	if len(dtstart) == 8 {
		start = "DTSTART;VALUE=DATE:" + dtstart
	}
	s, err := Parse(start+"\nRRULE:"+rule, Options{})
	if err != nil {
		return nil, err
	}
	at := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	if from != "" {
		f, err := Parse("DTSTART:"+from+"\nRRULE:FREQ=DAILY;COUNT=1", Options{})
		if err != nil {
			return nil, err
		}
		at, _ = f.First(at)
	}
	var out []string
	for next, ok := s.First(at); ok && len(out) < 1000; next, ok = s.Next(next) {
		out = append(out, libicalValue(next, dtstart))
	}
	return out, nil
}

// TestLibical runs libical's recurrence cases. Like libical's own test, it
// also starts each case without START-AT again at each of its instances,
// with COUNT lowered by the instances skipped, and expects the rest.
func TestLibical(t *testing.T) {
	t.Parallel()
	for _, c := range libicalCases {
		t.Run(fmt.Sprintf("line %d: %s", c.line, c.rule), func(t *testing.T) {
			t.Parallel()
			if why, ok := libicalDiffers[c.line]; ok {
				t.Skip(why)
			}
			want := strings.Split(c.instances, ",")
			if c.startAt != "" {
				for len(want) > 0 && want[0] < c.startAt {
					want = want[1:]
				}
			}
			got, err := libicalRun(c.rule, c.dtstart, c.startAt)
			require.NoError(t, err)
			require.Equal(t, want, got)
			if c.startAt != "" {
				return
			}
			for n := 1; n < len(want); n++ {
				rule := c.rule
				if i := strings.Index(rule, "COUNT="); i >= 0 {
					var count int
					_, err := fmt.Sscanf(rule[i:], "COUNT=%d", &count)
					require.NoError(t, err)
					rule = strings.Replace(rule, fmt.Sprintf("COUNT=%d", count), fmt.Sprintf("COUNT=%d", count-n), 1)
				}
				got, err := libicalRun(rule, want[n], "")
				require.NoError(t, err, "from instance %d", n)
				require.Equal(t, want[n:], got, "from instance %d", n)
			}
		})
	}
}
