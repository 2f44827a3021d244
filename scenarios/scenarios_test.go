package scenarios_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden timelines")

// specs returns the scenario files: every *.json beside this file that is
// not a golden timeline nor an invalid spec.
func specs(t *testing.T) []string {
	all, err := filepath.Glob("*.json")
	require.NoError(t, err)
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".timeline.json") && !strings.HasSuffix(f, ".invalid.json") {
			out = append(out, f)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// golden returns the golden timeline file of a scenario file.
func golden(spec string) string { return strings.TrimSuffix(spec, ".json") + ".timeline.json" }

func TestScenarios(t *testing.T) {
	for _, file := range specs(t) {
		t.Run(strings.TrimSuffix(file, ".json"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			lim := refresh.DefaultLimits()
			spec, err := scenarios.ParseSpec(data, lim)
			require.NoError(t, err)
			timeline, err := scenarios.Run(context.Background(), spec, lim)
			require.NoError(t, err)
			var got bytes.Buffer
			require.NoError(t, scenarios.WriteJSON(&got, timeline))
			if *update {
				require.NoError(t, os.WriteFile(golden(file), got.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden(file))
			require.NoError(t, err, "no golden timeline; run go test ./scenarios -update and review it")
			require.Equal(t, string(want), got.String())
		})
	}
}

// Each *.invalid.json beside this file is refused with the error of its
// golden *.invalid.error file.
func TestInvalidScenarios(t *testing.T) {
	files, err := filepath.Glob("*.invalid.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(file, ".invalid.json"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			_, err = scenarios.ParseSpec(data, refresh.DefaultLimits())
			require.Error(t, err)
			errFile := strings.TrimSuffix(file, ".json") + ".error"
			if *update {
				require.NoError(t, os.WriteFile(errFile, []byte(err.Error()+"\n"), 0o644))
			}
			want, rerr := os.ReadFile(errFile)
			require.NoError(t, rerr, "no golden error; run go test ./scenarios -update and review it")
			require.Equal(t, string(want), err.Error()+"\n")
		})
	}
}

// yearSpec is a year of a schedule every minute: about a million entries.
const yearSpec = `{"start": "2026-01-01T00:00:00Z", "until": "2026-12-31T00:00:00Z",
	"model": {"id": "runaway", "policy": {"schedule": "FREQ=MINUTELY", "timeout": "1s"}}}`

// Run stops at its entry limit with an error naming it, and returns the
// timeline so far.
func TestRunMaxEntries(t *testing.T) {
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec([]byte(yearSpec), lim)
	require.NoError(t, err)
	for _, tt := range []struct {
		opts []scenarios.RunOption
		want int
	}{
		{nil, scenarios.DefaultMaxEntries},
		{[]scenarios.RunOption{scenarios.WithMaxEntries(25)}, 25},
	} {
		timeline, err := scenarios.Run(context.Background(), spec, lim, tt.opts...)
		var tooLong *scenarios.EntriesError
		require.ErrorAs(t, err, &tooLong)
		require.Equal(t, tt.want, tooLong.Limit)
		require.Len(t, timeline, tt.want)
		require.Contains(t, err.Error(), fmt.Sprintf("more than %d entries", tt.want))
	}

	// A scenario within the limit runs whole.
	data, err := os.ReadFile("thumbnail.json")
	require.NoError(t, err)
	spec, err = scenarios.ParseSpec(data, lim)
	require.NoError(t, err)
	full, err := scenarios.Run(context.Background(), spec, lim)
	require.NoError(t, err)
	timeline, err := scenarios.Run(context.Background(), spec, lim, scenarios.WithMaxEntries(len(full)))
	require.NoError(t, err)
	require.Equal(t, full, timeline)
	_, err = scenarios.Run(context.Background(), spec, lim, scenarios.WithMaxEntries(len(full)-1))
	require.Error(t, err)
}

// Run stops when its context ends: it looks at it every step (freshen
// simulate's test interrupts a run in the middle).
func TestRunHonoursContext(t *testing.T) {
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec([]byte(yearSpec), lim)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = scenarios.Run(ctx, spec, lim)
	require.ErrorIs(t, err, context.Canceled)
}

// events lists the entries of model (the model's own with one model, "")
// as "15:04:05 event".
func events(timeline []scenarios.Entry, model string) []string {
	var out []string
	for _, e := range timeline {
		if e.Model == model {
			out = append(out, e.At.Format("15:04:05")+" "+e.Event)
		}
	}
	return out
}

// Starts a rate limit counted before the spec's start (Spec.Starts, as a
// projection of a real model passes them) hold its first start back until
// the oldest leaves the window; the wait shows until when in every format.
func TestScenarioWithEarlierStarts(t *testing.T) {
	t.Parallel()
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec([]byte(`{"start": "2026-03-02T06:00:00Z", "until": "2026-03-02T07:00:00Z",
		"limits": [{"kind": "rate_key", "key": "api.example.com", "max_starts": 2, "per": "1m"}],
		"model": {"id": "feed", "rate_key": "api.example.com", "trigger": true},
		"default": {"outcome": "success", "after": "5s"}}`), lim)
	require.NoError(t, err)
	const name = "rate_key:api.example.com"
	spec.Starts = []refresh.LimitStarts{
		{Limit: name, At: spec.Start.Add(-20 * time.Second), N: 1},
		{Limit: name, At: spec.Start.Add(-50 * time.Second), N: 1},
	}
	timeline, err := scenarios.Run(context.Background(), spec, lim)
	require.NoError(t, err)
	require.Equal(t, []string{"06:00:00 create", "06:00:00 wait", "06:00:10 start", "06:00:15 success"}, events(timeline, ""))
	wait := timeline[1]
	require.True(t, wait.WaitingForSlot)
	require.Equal(t, spec.Start.Add(10*time.Second), wait.WaitingUntil)
	require.Equal(t, `rate_key "api.example.com" (max_starts 2 per 1m)`, wait.Reason)

	var js, table, chart bytes.Buffer
	require.NoError(t, scenarios.WriteJSON(&js, timeline))
	require.Contains(t, js.String(), `"waiting_for_slot":true,"waiting_until":"2026-03-02T06:00:10Z"`)
	require.NoError(t, scenarios.WriteTable(&table, timeline))
	require.Contains(t, table.String(), `waits for rate_key "api.example.com" (max_starts 2 per 1m) until 2026-03-02 06:00:10`)
	require.NoError(t, scenarios.WriteMermaid(&chart, spec.Title(), timeline))
	require.Contains(t, chart.String(), "wait for a start until 2026-03-02 06 00 10 :milestone, 2026-03-02 06:00:00, 0m")
}

// A start counts once: a pass with no model due after a pass that started
// one under a rate limit does not count that start again, so a trigger
// within the window starts while the limit has room.
func TestScenarioCountsEachStartOnce(t *testing.T) {
	t.Parallel()
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec([]byte(`{"start": "2026-03-02T06:00:00Z", "until": "2026-03-02T06:10:00Z",
		"limits": [{"kind": "rate_key", "key": "once.example.com", "max_starts": 2, "per": "1m"}],
		"model": {"id": "feed", "rate_key": "once.example.com", "trigger": true},
		"default": {"outcome": "success", "after": "5s"},
		"actions": [{"at": "2026-03-02T06:00:20Z", "do": "trigger"}, {"at": "2026-03-02T06:00:40Z", "do": "trigger"}]}`), lim)
	require.NoError(t, err)
	for range 3 { // and each run alike
		timeline, err := scenarios.Run(context.Background(), spec, lim)
		require.NoError(t, err)
		require.Equal(t, []string{
			"06:00:00 create", "06:00:00 start", "06:00:05 success",
			"06:00:20 trigger", "06:00:20 start", "06:00:25 success",
			"06:00:40 trigger", "06:00:40 wait", "06:01:00 start", "06:01:05 success",
		}, events(timeline, ""))
	}
}

// A wait longer than the policy's max_lateness gets one wait_too_long
// entry, at the first pass after it, naming the limit.
func TestScenarioWaitTooLong(t *testing.T) {
	t.Parallel()
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec([]byte(`{"start": "2026-03-02T06:00:00Z", "until": "2026-03-02T08:00:00Z",
		"limits": [{"kind": "rate_key", "key": "k", "max_starts": 1, "per": "10m"}],
		"models": [{"id": "a", "rate_key": "k", "trigger": true, "default": {"outcome": "success", "after": "5m"}},
		  {"id": "b", "rate_key": "k", "policy": {"schedule": "FREQ=DAILY;BYHOUR=23", "max_lateness": "2m"}, "default": {"outcome": "success", "after": "1m"}}],
		"actions": [{"at": "2026-03-02T06:00:30Z", "do": "trigger", "model": "b"}]}`), lim)
	require.NoError(t, err)
	timeline, err := scenarios.Run(context.Background(), spec, lim)
	require.NoError(t, err)
	require.Equal(t, []string{"06:00:00 create", "06:00:30 trigger", "06:00:30 wait", "06:05:00 wait_too_long", "06:10:00 start", "06:11:00 success"},
		events(timeline, "b"))
	var table bytes.Buffer
	require.NoError(t, scenarios.WriteTable(&table, timeline))
	require.Contains(t, table.String(), `has waited longer than max_lateness for rate_key "k" (max_starts 1 per 10m); waiting until 2026-03-02 06:10:00`)
}
