package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// A spec with a State goes on from that state: no create entry, the round's
// attempt numbers and the running attempt carried over.
func TestRunFromState(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	policy := []byte(`{"timeout": "10m", "retry": {"delays": ["1m", "5m"]}}`)
	fail := scenarios.Behaviour{Outcome: "failure", Kind: "http_503", Message: "upstream 503"}
	type want struct {
		at       time.Duration // after start
		event    string
		attempt  int
		decision string
	}
	for _, tc := range []struct {
		name     string
		state    refresh.State
		attempts []scenarios.Behaviour
		def      scenarios.Behaviour
		want     []want
	}{{
		name: "retry pending",
		state: refresh.State{AttemptNo: 1, ConsecutiveFailures: 1, FailingSince: start.Add(-2 * time.Minute),
			RefreshAt: start.Add(time.Minute)},
		def: fail,
		want: []want{
			{time.Minute, "start", 2, ""},
			// retry 2 waits delays[1] = 5m
			{time.Minute, "failure", 2, refresh.DecisionRetry},
			{6 * time.Minute, "start", 3, ""},
			// 3 > max_retries 2
			{6 * time.Minute, "failure", 3, refresh.DecisionDisable},
		},
	}, {
		name: "running",
		state: refresh.State{AttemptNo: 1, AttemptUID: "running-uid", StartedAt: start.Add(-time.Minute),
			DeadlineAt: start.Add(9 * time.Minute), RefreshAt: start.Add(9 * time.Minute)},
		attempts: []scenarios.Behaviour{{Outcome: "failure", Kind: "http_503", After: 30 * time.Second}},
		def:      scenarios.Behaviour{Outcome: "success", After: 2 * time.Minute},
		want: []want{
			// due 30s after its start, before the simulation: it arrives at start
			{0, "failure", 1, refresh.DecisionRetry},
			{time.Minute, "start", 2, ""},
			{3 * time.Minute, "success", 0, ""},
		},
	}, {
		name: "running past its deadline",
		state: refresh.State{AttemptNo: 1, AttemptUID: "running-uid", StartedAt: start.Add(-11 * time.Minute),
			DeadlineAt: start.Add(-time.Minute), RefreshAt: start.Add(-time.Minute)},
		def: scenarios.Behaviour{Outcome: "timeout"},
		want: []want{
			{0, "timeout", 1, refresh.DecisionRetry},
			{time.Minute, "start", 2, ""},
			{11 * time.Minute, "timeout", 2, refresh.DecisionRetry},
			{16 * time.Minute, "start", 3, ""},
			{26 * time.Minute, "timeout", 3, refresh.DecisionDisable},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := tc.state
			spec := scenarios.Spec{
				Start: start, Until: start.Add(24 * time.Hour),
				Model:    scenarios.SpecModel{ID: "m1", Policy: policy, State: &state, CreatedAt: start.Add(-48 * time.Hour)},
				Attempts: tc.attempts, Default: tc.def,
			}
			timeline, err := scenarios.Run(context.Background(), spec, refresh.DefaultLimits())
			require.NoError(t, err)
			got := make([]want, 0, len(timeline))
			for _, e := range timeline {
				got = append(got, want{e.At.Sub(start), e.Event, e.AttemptNo, e.Decision})
			}
			require.Equal(t, tc.want, got)
		})
	}
}
