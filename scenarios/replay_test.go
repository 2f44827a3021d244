package scenarios_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/scenarios"
)

// record runs the spec file with the real service on a memory store and
// returns the model as it ended and its whole history, as a replay reads
// them.
func record(t *testing.T, file string) (refresh.Model, []refresh.Attempt, scenarios.Spec) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec(data, lim)
	require.NoError(t, err)
	store := memory.NewStore()
	_, err = scenarios.Run(context.Background(), spec, lim, scenarios.WithStore(store))
	require.NoError(t, err)
	m, err := store.Get(context.Background(), spec.Model.ID)
	require.NoError(t, err)
	history, err := store.History(context.Background(), spec.Model.ID, time.Time{}, 0)
	require.NoError(t, err)
	require.NotEmpty(t, history)
	return m, history, spec
}

func replayFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "replay", name))
	require.NoError(t, err)
	return data
}

// checkGolden compares got with the golden file, or rewrites it with
// -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", "replay", name)
	if *update {
		require.NoError(t, os.WriteFile(file, got, 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "no golden file; run go test ./scenarios -update and review it")
	require.Equal(t, string(want), string(got))
}

// A model failing every day since March 6 under give_up_after P3D was
// disabled on March 9; replayed under P2D, the same failures disable it on
// March 8, one day earlier, after three attempts fewer.
func TestReplayShorterGiveUp(t *testing.T) {
	t.Parallel()
	m, history, spec := record(t, filepath.Join("testdata", "replay", "history.json"))
	require.True(t, m.Disabled())
	rec := scenarios.Recording{Model: m, Attempts: history, Since: spec.Until.AddDate(0, 0, -30), Until: spec.Until}
	res, err := scenarios.RunReplay(context.Background(), rec, replayFile(t, "policy.json"), refresh.DefaultLimits())
	require.NoError(t, err)

	require.Equal(t, scenarios.CoveredCreation, res.CoveredBy)
	require.Equal(t, m.CreatedAt, res.From)
	require.Equal(t, []time.Time{m.DisabledAt}, res.RecordedTally.Disabled)
	require.Len(t, res.ReplayTally.Disabled, 1)
	require.Equal(t, 24*time.Hour, res.RecordedTally.Disabled[0].Sub(res.ReplayTally.Disabled[0]), "disabled one day earlier")
	require.Equal(t, res.RecordedTally.Attempts-3, res.ReplayTally.Attempts, "a day of three attempts fewer")
	require.Equal(t, len(history), res.RecordedTally.Attempts)

	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"shorter-give-up.txt", func(b *bytes.Buffer) error { return scenarios.WriteReplayTable(b, res) }},
		{"shorter-give-up.json", func(b *bytes.Buffer) error { return scenarios.WriteReplayJSON(b, res) }},
		{"shorter-give-up.mermaid", func(b *bytes.Buffer) error { return scenarios.WriteReplayMermaid(b, res) }},
	} {
		var b bytes.Buffer
		require.NoError(t, f.write(&b))
		checkGolden(t, f.name, b.Bytes())
	}
	var parsed map[string]any
	var b bytes.Buffer
	require.NoError(t, scenarios.WriteReplayJSON(&b, res))
	require.NoError(t, json.Unmarshal(b.Bytes(), &parsed), b.String())
}

// Replayed under its own policy, a history comes out as it was recorded:
// the same starts, outcomes and decisions at the same times.
func TestReplayOwnPolicyReproducesHistory(t *testing.T) {
	t.Parallel()
	m, history, spec := record(t, filepath.Join("testdata", "replay", "history.json"))
	rec := scenarios.Recording{Model: m, Attempts: history, Since: spec.Start, Until: spec.Until}
	res, err := scenarios.RunReplay(context.Background(), rec, spec.Model.Policy, refresh.DefaultLimits())
	require.NoError(t, err)
	type step struct {
		At                    time.Time
		Event, Kind, Decision string
		AttemptNo             int
	}
	steps := func(timeline []scenarios.Entry) []step {
		var out []step
		for _, e := range timeline {
			out = append(out, step{e.At, e.Event, e.Kind, e.Decision, e.AttemptNo})
		}
		return out
	}
	require.Equal(t, steps(res.Recorded), steps(res.Replay))
	require.Equal(t, res.RecordedTally, res.ReplayTally)
}

// An attempt behaves as the latest recorded attempt of known outcome
// started at or before its start; before the first, as the first.
func TestReplayBehaviourByStart(t *testing.T) {
	t.Parallel()
	at := func(h int) time.Time { return time.Date(2026, 3, 2, h, 0, 0, 0, time.UTC) }
	history := []refresh.Attempt{ // newest first, as a store answers
		{StartedAt: at(10), FinishedAt: at(10).Add(time.Minute), Outcome: refresh.AttemptSuperseded},
		{StartedAt: at(8), FinishedAt: at(9), Outcome: refresh.EventTimeout, ErrorKind: refresh.KindTimeout},
		{StartedAt: at(6), FinishedAt: at(6).Add(2 * time.Minute), Outcome: refresh.OutcomeFailure, ErrorKind: "http_503", ErrorMessage: "503"},
		{StartedAt: at(4), FinishedAt: at(4).Add(7 * time.Minute), Outcome: refresh.OutcomeSuccess},
	}
	success := scenarios.Behaviour{Outcome: "success", After: 7 * time.Minute}
	failure := scenarios.Behaviour{Outcome: "failure", After: 2 * time.Minute, Kind: "http_503", Message: "503"}
	timeout := scenarios.Behaviour{Outcome: "timeout"}
	tests := []struct {
		name  string
		start time.Time
		want  scenarios.Behaviour
	}{
		{"before the first", at(1), success},
		{"at the first", at(4), success},
		{"between", at(5), success},
		{"at a failure", at(6), failure},
		{"after a failure", at(7), failure},
		{"at a timeout", at(8), timeout},
		{"a superseded attempt tells nothing", at(11), timeout},
	}
	r := scenarios.NewReplay(history)
	require.Equal(t, 3, r.Len())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.At(tt.start)
			require.True(t, ok)
			require.Equal(t, tt.want, got)
		})
	}
	_, ok := scenarios.NewReplay(history[:1]).At(at(12))
	require.False(t, ok, "no attempt of known outcome")
}

// The actions a history shows are replayed at their times: a trigger
// where an attempt was superseded, a cancel where one was cancelled, and,
// for an on-demand model, a trigger at each start of a round; so the
// replay of an on-demand model under its own policy starts when it did.
func TestReplayRecordedActions(t *testing.T) {
	t.Parallel()
	m, history, spec := record(t, "edit-supersedes-running.json")
	rec := scenarios.Recording{Model: m, Attempts: history, Since: spec.Start, Until: spec.Until}
	res, err := scenarios.RunReplay(context.Background(), rec, spec.Model.Policy, refresh.DefaultLimits())
	require.NoError(t, err)
	pick := func(timeline []scenarios.Entry, events ...string) []string {
		var out []string
		for _, e := range timeline {
			for _, ev := range events {
				if e.Event == ev {
					out = append(out, e.At.Format(time.TimeOnly)+" "+e.Event)
				}
			}
		}
		return out
	}
	require.Equal(t, []string{"09:00:00 start", "09:02:00 start", "09:20:00 start"}, pick(res.Recorded, refresh.EventStart))
	require.Equal(t, pick(res.Recorded, refresh.EventStart), pick(res.Replay, refresh.EventStart))
	require.Equal(t, []string{"09:02:00 trigger", "09:20:30 cancel"}, pick(res.Recorded, refresh.EventTrigger, refresh.EventCancel))
	require.Subset(t, pick(res.Replay, refresh.EventTrigger, refresh.EventCancel), pick(res.Recorded, refresh.EventTrigger, refresh.EventCancel))
}

func TestReplayBadInput(t *testing.T) {
	t.Parallel()
	m, history, spec := record(t, filepath.Join("testdata", "replay", "history.json"))
	good := replayFile(t, "policy.json")
	tests := []struct {
		name   string
		since  time.Time
		policy string
		want   string
	}{
		{"since in the future", spec.Until.Add(time.Hour), string(good), "since: must be before now"},
		{"since too long ago", spec.Until.AddDate(0, 0, -367), string(good), "since: must be at most 366 days ago, got 8808h0m0s"},
		{"bad policy", spec.Start, `{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`, "policy.retry.backoff.multiplier: must be >= 1, got 0.5"},
		{"policy not an object", spec.Start, `[]`, "policy: must be an object, got []"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := scenarios.Recording{Model: m, Attempts: history, Since: tt.since, Until: spec.Until}
			_, err := scenarios.RunReplay(context.Background(), rec, json.RawMessage(tt.policy), refresh.DefaultLimits())
			var v *refresh.ValidationError
			require.True(t, errors.As(err, &v), "%v", err)
			require.Contains(t, err.Error(), tt.want)
		})
	}

	// A period without a recorded attempt says so.
	rec := scenarios.Recording{Model: m, Attempts: history, Since: spec.Until.Add(-time.Hour), Until: spec.Until}
	_, err := scenarios.RunReplay(context.Background(), rec, good, refresh.DefaultLimits())
	var none *scenarios.NoHistoryError
	require.True(t, errors.As(err, &none), "%v", err)
	require.Contains(t, err.Error(), `model "bigtable-7" has no recorded attempt from 2026-03-11T23:00:00Z to 2026-03-12T00:00:00Z`)
}

// When only the newest attempts were read, the period covered starts at
// the oldest of them.
func TestReplayTruncatedHistory(t *testing.T) {
	t.Parallel()
	m, history, spec := record(t, filepath.Join("testdata", "replay", "history.json"))
	newest := history[:5]
	rec := scenarios.Recording{Model: m, Attempts: newest, Since: spec.Start, Until: spec.Until, Truncated: true}
	res, err := scenarios.RunReplay(context.Background(), rec, replayFile(t, "policy.json"), refresh.DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, scenarios.CoveredHistory, res.CoveredBy)
	require.Equal(t, newest[len(newest)-1].StartedAt, res.From)
	require.Contains(t, res.CoverageNote(), "only the newest attempts were read, the oldest started at "+newest[len(newest)-1].StartedAt.Format(time.RFC3339))
}

// A scheduled model created with trigger: true started before its first
// occurrence; its replay triggers that start too, and replays its whole
// history under its own policy as it went.
func TestReplayTriggeredAtCreation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "nightly.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"start": "2026-03-02T10:00:00Z", "until": "2026-03-05T00:00:00Z",
		"model": {"id": "nightly", "trigger": true, "policy": {"schedule": "FREQ=DAILY;BYHOUR=2;BYMINUTE=0;BYSECOND=0", "timeout": "1h"}},
		"default": {"outcome": "success", "after": "1m"}}`), 0o644))
	m, history, spec := record(t, file)
	rec := scenarios.Recording{Model: m, Attempts: history, Since: spec.Start.Add(-time.Hour), Until: spec.Until}
	res, err := scenarios.RunReplay(context.Background(), rec, spec.Model.Policy, refresh.DefaultLimits())
	require.NoError(t, err)
	starts := func(timeline []scenarios.Entry) []string {
		var out []string
		for _, e := range timeline {
			if e.Event == refresh.EventStart {
				out = append(out, e.At.Format(time.RFC3339))
			}
		}
		return out
	}
	require.Equal(t, []string{"2026-03-02T10:00:00Z", "2026-03-03T02:00:00Z", "2026-03-04T02:00:00Z"}, starts(res.Recorded))
	require.Equal(t, starts(res.Recorded), starts(res.Replay))
}
