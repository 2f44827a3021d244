package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func runScheduleArgs(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"schedule"}, args...), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestScheduleJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := runScheduleArgs(
		"--schedule", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
		"--after", "2026-03-28T12:00:00Z", "--count", "4")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, `["2026-03-28T15:00:00Z","2026-03-29T04:00:00Z","2026-03-29T14:00:00Z","2026-03-30T04:00:00Z"]`+"\n", out)
	require.Empty(t, errOut)
}

func TestScheduleText(t *testing.T) {
	t.Parallel()
	code, out, errOut := runScheduleArgs(
		"--schedule", "FREQ=DAILY;BYHOUR=6", "--timezone", "Europe/Paris",
		"--created", "2026-01-01T00:00:00Z", "--after", "2026-03-27T12:00:00Z", "--count", "3", "--format", "text")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "2026-03-28T06:00:00+01:00  (2026-03-28T05:00:00Z)\n"+
		"2026-03-29T06:00:00+02:00  (2026-03-29T04:00:00Z)\n"+
		"2026-03-30T06:00:00+02:00  (2026-03-30T04:00:00Z)\n", out)
}

func TestScheduleAnchorsBareRuleOnCreated(t *testing.T) {
	t.Parallel()
	// Every third hour from midnight of the creation day in New York.
	code, out, _ := runScheduleArgs("--schedule", "FREQ=HOURLY;INTERVAL=3", "--timezone", "America/New_York",
		"--created", "2026-03-02T13:00:00-05:00", "--after", "2026-03-10T12:30:00Z", "--count", "2")
	require.Equal(t, 0, code)
	require.Equal(t, `["2026-03-10T13:00:00Z","2026-03-10T16:00:00Z"]`+"\n", out)

	// Without --created, the anchor is the day of --after.
	code, out, _ = runScheduleArgs("--schedule", "FREQ=HOURLY;INTERVAL=5", "--after", "2026-03-10T12:30:00Z", "--count", "2")
	require.Equal(t, 0, code)
	require.Equal(t, `["2026-03-10T15:00:00Z","2026-03-10T20:00:00Z"]`+"\n", out)
}

func TestScheduleEnds(t *testing.T) {
	t.Parallel()
	code, out, _ := runScheduleArgs("--schedule", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=3",
		"--after", "2026-01-01T12:00:00Z", "--count", "5")
	require.Equal(t, 0, code)
	require.Equal(t, `["2026-01-02T00:00:00Z","2026-01-03T00:00:00Z"]`+"\n", out)

	code, out, _ = runScheduleArgs("--schedule", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=3",
		"--after", "2027-01-01T00:00:00Z")
	require.Equal(t, 0, code)
	require.Equal(t, "[]\n", out)
}

func TestScheduleInvalidInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--schedule", "FREQ=DAILY;BYHOUR=25", "--after", "2026-01-01T00:00:00Z"},
			"freshen schedule: invalid --schedule: BYHOUR=25: must be between 0 and 23"},
		{[]string{"--schedule", "FREQ=SOMETIMES", "--after", "2026-01-01T00:00:00Z"},
			"freshen schedule: invalid --schedule: FREQ=SOMETIMES: unknown frequency"},
		{[]string{"--schedule", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "--after", "2026-01-01T00:00:00Z"},
			"freshen schedule: invalid --schedule: rule has no occurrence"},
		{[]string{"--schedule", "FREQ=DAILY", "--timezone", "Mars/Base", "--after", "2026-01-01T00:00:00Z"},
			`freshen schedule: invalid --timezone: unknown time zone "Mars/Base"`},
		{[]string{"--schedule", "FREQ=DAILY"}, "freshen schedule: --after is required"},
		{[]string{"--after", "2026-01-01T00:00:00Z"}, "freshen schedule: --schedule is required"},
		{[]string{"--schedule", "FREQ=DAILY", "--after", "yesterday"},
			`freshen schedule: --after must be an RFC 3339 time like 2026-03-29T06:00:00Z, got "yesterday"`},
		{[]string{"--schedule", "FREQ=DAILY", "--after", "2026-01-01T00:00:00Z", "--created", "2026-01-01"},
			`freshen schedule: --created must be an RFC 3339 time like 2026-03-01T00:00:00Z, got "2026-01-01"`},
		{[]string{"--schedule", "FREQ=DAILY", "--after", "2026-01-01T00:00:00Z", "--count", "0"},
			"freshen schedule: --count must be between 1 and 10000, got 0"},
		{[]string{"--schedule", "FREQ=DAILY", "--after", "2026-01-01T00:00:00Z", "--format", "yaml"},
			`freshen schedule: --format must be json or text, got "yaml"`},
		{[]string{"--schedule", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY\nRRULE:FREQ=WEEKLY", "--after", "2026-01-01T00:00:00Z", "--max-rules", "1"},
			"freshen schedule: invalid --schedule: RRULE: at most 1 rules per schedule, got 2"},
		{[]string{"--schedule", "FREQ=DAILY;COUNT=11", "--after", "2026-01-01T00:00:00Z", "--max-count", "10"},
			"freshen schedule: invalid --schedule: COUNT=11: must be between 1 and 10"},
		{[]string{"--schedule", "FREQ=DAILY", "--after", "2026-01-01T00:00:00Z", "extra"},
			`freshen schedule: unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runScheduleArgs(tt.args...)
			require.Equal(t, 2, code)
			require.Empty(t, out)
			require.Contains(t, errOut, tt.want)
		})
	}
}

func TestScheduleLimitFlags(t *testing.T) {
	t.Parallel()
	text := "DTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY;COUNT=200000"
	code, _, errOut := runScheduleArgs("--schedule", text, "--after", "2026-01-01T00:00:00Z")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "COUNT=200000: must be between 1 and 100000")

	// The last of 200,000 minutes from 1 January 2026 is 199,999 minutes
	// later: 138 days, 21 hours and 19 minutes.
	code, out, errOut := runScheduleArgs("--schedule", text, "--after", "2026-05-19T21:18:00Z", "--count", "3", "--max-count", "1000000")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, `["2026-05-19T21:19:00Z"]`+"\n", out)
}
