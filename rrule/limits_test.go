package rrule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimits(t *testing.T) {
	t.Parallel()
	rules := func(n int) string {
		return "DTSTART:20260101T000000Z\n" + joinLines(n, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d", i%24) })
	}
	tests := []struct {
		name  string
		text  string
		lim   Limits
		limit string // the LimitError's Limit, "" for none
		want  string // the error, a regular expression where it holds a computed bound
	}{
		{"bytes", "FREQ=DAILY;" + strings.Repeat(" ", 70000), Limits{}, "MaxBytes", "schedule: at most 65536 bytes, got 70011"},
		{"bytes, configured", "FREQ=DAILY;BYHOUR=1,2,3", Limits{MaxBytes: 10}, "MaxBytes", "schedule: at most 10 bytes, got 23"},
		{"rules", rules(101), Limits{}, "MaxRules", "RRULE: at most 100 rules per schedule, got 101"},
		{"rules at the limit", rules(100), Limits{}, "", ""},
		{"rules, configured", rules(3), Limits{MaxRules: 2}, "MaxRules", "RRULE: at most 2 rules per schedule, got 3"},
		{"rdates", "DTSTART:20260101T000000Z\nRDATE:" + dateList(1001, worstStart), Limits{}, "MaxRDates", "RDATE: at most 1000 values per schedule, got 1001"},
		{"rdates on several lines", "DTSTART:20260101T000000Z\nRDATE:" + dateList(2, worstStart) + "\nRDATE:" + dateList(2, worstStart),
			Limits{MaxRDates: 3}, "MaxRDates", "RDATE: at most 3 values per schedule, got 4"},
		{"exdates", "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY\nEXDATE:" + dateList(1001, worstStart), Limits{}, "MaxExDates", "EXDATE: at most 1000 values per schedule, got 1001"},
		{"exdates at the limit", "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY\nEXDATE:" + dateList(1000, worstStart), Limits{}, "", ""},
		{"count", "FREQ=DAILY;COUNT=100001", Limits{}, "", "COUNT=100001: must be between 1 and 100000"},
		{"count, configured", "FREQ=DAILY;COUNT=11", Limits{MaxCount: 10}, "", "COUNT=11: must be between 1 and 10"},
		{"count summed over the rules", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=60000\nRRULE:FREQ=HOURLY;COUNT=50000",
			Limits{}, "MaxCount", "RRULE on line 3: COUNT=50000: at most 100000 occurrences counted per schedule, over all its rules, got 110000"},
		{"count of a sparse rule", "DTSTART:20000229T000000Z\nRRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;COUNT=100", Limits{MaxParseSteps: 2000},
			"MaxParseSteps", "COUNT=100: counting the occurrences from DTSTART takes more than 2000 steps (Limits.MaxParseSteps); lower COUNT"},
		{"count of a sparse rule, walked", "DTSTART:20000229T000000Z\nRRULE:FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=29;COUNT=100", Limits{MaxParseSteps: 2000},
			"MaxParseSteps", "COUNT=100: counting the occurrences from DTSTART takes more than 2000 steps (Limits.MaxParseSteps); lower COUNT"},
		{"steps", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=401;BYMONTH=2;BYMONTHDAY=29", Limits{MaxParseSteps: 1_000_000},
			"MaxSteps", `^RRULE: finding an occurrence may take up to \d+ steps, more than the limit of 50000$`},
		{"steps over several rules", rules(100), Limits{MaxSteps: 10000},
			"MaxSteps", `^RRULE: finding an occurrence across the 100 rules may take up to \d+ steps, more than the limit of 10000 \(the costliest rule, FREQ=DAILY;INTERVAL=1, up to \d+\)$`},
		{"parse steps of the bound", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=265;BYMONTH=2;BYMONTHDAY=29", Limits{},
			"MaxParseSteps", "RRULE: bounding the search for an occurrence of the rule takes more than 100000 steps (Limits.MaxParseSteps); simplify the rule"},
		{"parse steps of the bound, several rules", worstRefused[6].text, Limits{},
			"MaxParseSteps", "RRULE on line 13: bounding the search for an occurrence of the rules up to this one takes more than 100000 steps (Limits.MaxParseSteps); use fewer or simpler rules"},
		{"parse steps of tables", worstRefused[9].text, Limits{},
			"MaxParseSteps", "RRULE on line 24: preparing the rules up to this one takes more than 100000 steps (Limits.MaxParseSteps); use fewer or simpler rules"},
		{"parse steps of a table", "DTSTART:20260101T000000Z\nRRULE:FREQ=SECONDLY;BYSECOND=" + numbers(1, 59), Limits{MaxParseSteps: 2000},
			"MaxParseSteps", "RRULE: preparing the rule takes more than 2000 steps (Limits.MaxParseSteps); simplify the rule"},
		{"parse steps of the text", "FREQ=DAILY;BYHOUR=" + numbers(0, 23), Limits{MaxParseSteps: 100},
			"MaxParseSteps", "schedule: reading 79 bytes takes more than 100 steps (Limits.MaxParseSteps); shorten it"},
		{"parse steps of EXDATEs", worstRefused[4].text, Limits{},
			"MaxParseSteps", "EXDATE: checking 1000 values against 100 rules takes more than 100000 steps (Limits.MaxParseSteps); use fewer values or rules"},
		{"parse steps of EXDATEs, configured", "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY\nEXDATE:" + dateList(1000, worstStart), Limits{MaxParseSteps: 10000},
			"MaxParseSteps", "EXDATE: checking 1000 values against 1 rules takes more than 10000 steps (Limits.MaxParseSteps); use fewer values or rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.text, Options{Limits: tt.lim})
			if tt.want == "" {
				require.NoError(t, err)
				require.LessOrEqual(t, s.bound, tt.lim.orDefault().MaxSteps)
				return
			}
			require.Error(t, err)
			if strings.HasPrefix(tt.want, "^") {
				require.Regexp(t, tt.want, err.Error())
			} else {
				require.EqualError(t, err, tt.want)
			}
			var le *LimitError
			require.Equal(t, tt.limit != "", errors.As(err, &le))
			if tt.limit != "" {
				require.Equal(t, tt.limit, le.Limit)
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultLimits, Limits{}.orDefault())
	require.Equal(t, 7, Limits{MaxRules: 7}.orDefault().MaxRules)
	require.Equal(t, DefaultLimits.MaxSteps, Limits{MaxSteps: -1}.orDefault().MaxSteps)
}

// TestWorstTexts checks that the costliest texts within the default
// limits are accepted, or refused for a limit, and that Next on the
// accepted ones stays within their bound.
func TestWorstTexts(t *testing.T) {
	t.Parallel()
	for _, c := range worstAccepted {
		s, err := Parse(c.text, Options{})
		require.NoError(t, err, c.name)
		require.LessOrEqual(t, s.bound, DefaultLimits.MaxSteps, c.name)
		var times []int64
		for at := worstStart.Unix() - 10*secondsPerDay; at < worstStart.Unix()+1200*secondsPerDay; at += 52007 {
			times = append(times, at)
		}
		requireWithinBound(t, s, c.name, times)
	}
	for _, c := range worstRefused {
		_, err := Parse(c.text, Options{})
		var le *LimitError
		if !errors.As(err, &le) {
			require.Error(t, err, c.name)
		}
	}
}

func TestExDateRuns(t *testing.T) {
	t.Parallel()
	// Daily at 06:00; EXDATEs remove the 996 days from 1 January 2026,
	// then two separate runs, and one is no occurrence.
	text := "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY\nEXDATE:" + dateList(996, worstStart) +
		"\nEXDATE:20290101T060000Z,20290102T060000Z,20290104T060000Z,20290105T070000Z"
	s, err := Parse(text, Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"2028-09-23T06:00:00Z", "2028-09-24T06:00:00Z"}, nextN(s, utc("2025-01-01T00:00:00Z"), 2))
	require.Equal(t, []string{"2028-12-31T06:00:00Z", "2029-01-03T06:00:00Z", "2029-01-05T06:00:00Z", "2029-01-06T06:00:00Z"},
		nextN(s, utc("2028-12-30T12:00:00Z"), 4))
	_, _, steps := s.nextSteps(utc("2025-12-31T12:00:00Z").Unix())
	require.LessOrEqual(t, steps, s.bound)

	_, err = Parse("DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY;COUNT=1000\nEXDATE:"+dateList(1000, worstStart), Options{})
	require.EqualError(t, err, "rule has no occurrence: EXDATE removes every occurrence")
}

func TestAnchoredAndReanchor(t *testing.T) {
	t.Parallel()
	text := "FREQ=WEEKLY;INTERVAL=2;BYHOUR=9;UNTIL=20300101T000000Z"
	opt := Options{Timezone: "Europe/Paris", Created: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)} // a Monday
	s, err := Parse(text, opt)
	require.NoError(t, err)
	require.True(t, s.Anchored())

	same, err := s.Reanchor(time.Date(2026, 3, 2, 22, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Same(t, s, same, "same day in Paris")

	created := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC) // a Wednesday
	c, err := s.Reanchor(created)
	require.NoError(t, err)
	opt.Created = created
	p, err := Parse(text, opt)
	require.NoError(t, err)
	require.Same(t, c, p, "Parse with that anchor finds the reanchored schedule")
	require.Equal(t, []string{"2026-03-04T08:00:00Z", "2026-03-18T08:00:00Z"}, nextN(c, utc("2026-03-01T00:00:00Z"), 2))
	require.Equal(t, []string{"2026-03-02T08:00:00Z", "2026-03-16T08:00:00Z"}, nextN(s, utc("2026-03-01T00:00:00Z"), 2))

	_, err = s.Reanchor(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	require.EqualError(t, err, "rule has no occurrence", "UNTIL before the new anchor")

	d, err := Parse("DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY", Options{})
	require.NoError(t, err)
	require.False(t, d.Anchored())
	same, err = d.Reanchor(created)
	require.NoError(t, err)
	require.Same(t, d, same)
}

func TestMinGap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		after string
		n     int
		want  time.Duration
		ok    bool
	}{
		{"daily at 6 and 16", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16", "2026-03-01T00:00:00Z", 1000, 10 * time.Hour, true},
		{"the spring change shortens a night", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=1,3", "2026-03-25T00:00:00Z", 10, time.Hour, true},
		{"within the first n only", "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=3\nRDATE:20260105T010000Z", "2026-01-01T00:00:00Z", 20, 3 * time.Hour, true},
		{"an RDATE among the first n", "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY;INTERVAL=3\nRDATE:20260101T100000Z", "2026-01-01T00:00:00Z", 20, time.Hour, true},
		{"EXDATEs widen gaps", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY\nEXDATE:20260102T000000Z,20260103T000000Z\nRDATE:20260101T120000Z", "2025-12-31T00:00:00Z", 3, 12 * time.Hour, true},
		{"EXDATEs, without the RDATE", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY\nEXDATE:20260102T000000Z,20260103T000000Z", "2025-12-31T00:00:00Z", 2, 72 * time.Hour, true},
		{"one occurrence left", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=3", "2026-01-02T12:00:00Z", 1000, 0, false},
		{"n of 1", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY", "2026-01-02T12:00:00Z", 1, 0, false},
		{"two rules", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;BYHOUR=12\nRRULE:FREQ=WEEKLY;BYDAY=MO;BYHOUR=12;BYMINUTE=5", "2026-01-01T00:00:00Z", 1000, 5 * time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.text, Options{})
			require.NoError(t, err)
			got, ok := s.MinGap(utc(tt.after), tt.n)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestMinGapMatchesNext compares MinGap with the gaps between successive
// Next calls on generated schedules.
func TestMinGapMatchesNext(t *testing.T) {
	t.Parallel()
	rng := newTestRand(53)
	for range 300 {
		c := genSchedule(rng)
		s, err := Parse(c.Text(), c.Options())
		if err != nil {
			continue
		}
		n := 1 + rng.IntN(200)
		after := time.Unix(c.From, 0)
		want, wantOK := time.Duration(0), false
		prev, ok := s.Next(after)
		for i := 1; ok && i < n; i++ {
			var next time.Time
			if next, ok = s.Next(prev); ok {
				if gap := next.Sub(prev); !wantOK || gap < want {
					want, wantOK = gap, true
				}
				prev = next
			}
		}
		got, gotOK := s.MinGap(after, n)
		require.Equal(t, wantOK, gotOK, c.Text())
		require.Equal(t, want, got, "%s\nn=%d", c.Text(), n)
	}
}

// TestErrorsStayShort checks that an error quotes at most a little of a
// long text.
func TestErrorsStayShort(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("X", 30000)
	for _, text := range []string{
		long,
		long + ":FREQ=DAILY",
		"DTSTART;" + long + "=1:20260101T000000\nRRULE:FREQ=DAILY",
		"DTSTART;TZID=" + long + ":20260101T000000\nRRULE:FREQ=DAILY",
		"DTSTART;VALUE=" + long + ":20260101T000000\nRRULE:FREQ=DAILY",
		"RRULE;" + long + "=1:FREQ=DAILY",
		"FREQ=" + long,
		"FREQ=DAILY;WKST=" + long,
		"FREQ=DAILY;" + long + "=1",
		"FREQ=DAILY;" + long,
		"FREQ=DAILY;BYHOUR=" + long,
		"FREQ=DAILY;INTERVAL=" + long,
		"FREQ=DAILY;UNTIL=" + long,
		"FREQ=WEEKLY;BYDAY=" + long,
		"FREQ=WEEKLY;BYDAY=1" + long + "MO",
		"FREQ=DAILY;BYMONTHDAY=" + strings.Repeat("1,", 10000) + "1;BYSETPOS=" + strings.Repeat("2,", 1000) + "1;BYDAY=1MO",
		"DTSTART:20260101T000000\n" + long + ":1",
	} {
		_, err := Parse(text, Options{})
		require.Error(t, err)
		require.Less(t, len(err.Error()), 300, "%.60s", text)
	}
}
