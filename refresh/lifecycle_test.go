package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    refresh.Event
		want []string
	}{
		{refresh.Event{Type: refresh.EventStart}, []string{"started"}},
		{refresh.Event{Type: refresh.EventSuccess}, []string{"succeeded"}},
		{refresh.Event{Type: refresh.EventSuccess, Recovered: true}, []string{"succeeded", "recovered"}},
		{refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionRetry}, []string{"failed", "retry_scheduled"}},
		{refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionRetryAligned}, []string{"failed", "retry_scheduled"}},
		{refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionWaitNext}, []string{"failed", "retry_scheduled"}},
		{refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionDisable}, []string{"failed", "disabled"}},
		{refresh.Event{Type: refresh.EventTimeout, Decision: refresh.DecisionRetry}, []string{"failed", "retry_scheduled"}},
		{refresh.Event{Type: refresh.EventTimeout, Decision: refresh.DecisionDisable}, []string{"failed", "disabled"}},
		{refresh.Event{Type: refresh.EventEnable}, []string{"enabled"}},
		{refresh.Event{Type: refresh.EventStale}, []string{"stale"}},
		{refresh.Event{Type: refresh.EventDelete}, []string{"deleted"}},
		{refresh.Event{Type: refresh.EventSkip}, []string{"skipped"}},
		{refresh.Event{Type: refresh.EventSnooze}, []string{"snoozed"}},
		{refresh.Event{Type: refresh.EventCreate}, []string{"create"}},
		{refresh.Event{Type: refresh.EventUpdate}, []string{"update"}},
		{refresh.Event{Type: refresh.EventPause}, []string{"pause"}},
		{refresh.Event{Type: refresh.EventCancel}, []string{"cancel"}},
		{refresh.Event{Type: refresh.EventDebounce}, []string{"debounce"}},
		{refresh.Event{Type: refresh.EventWait}, []string{"wait"}},
		{refresh.Event{Type: refresh.EventFreshnessLost}, []string{"freshness_lost"}},
		{refresh.Event{Type: refresh.EventFreshnessRestored}, []string{"freshness_restored"}},
	} {
		got := tc.e.Lifecycle()
		require.Equal(t, tc.want, got, "%s/%s", tc.e.Type, tc.e.Decision)
		for _, n := range got {
			require.Contains(t, refresh.LifecycleNames, n)
		}
	}
}

// A success that ends a streak of failures is marked recovered; one after
// another success is not.
func TestSuccessRecovered(t *testing.T) {
	t.Parallel()
	m := refresh.Model{ID: "m", Policy: mustPolicy(t, `{"schedule": "FREQ=HOURLY"}`), CreatedAt: t0, State: refresh.State{RefreshAt: t0}}
	run := func(uid string, end func(refresh.Model, time.Time) (refresh.Model, refresh.Decision)) refresh.Decision {
		t.Helper()
		now := m.RefreshAt
		var d refresh.Decision
		m, d = refresh.Start(m, uid, now)
		require.Equal(t, refresh.EventStart, d.Event)
		m, d = end(m, now.Add(time.Minute))
		return d
	}
	fail := func(m refresh.Model, now time.Time) (refresh.Model, refresh.Decision) {
		return refresh.Failed(m, refresh.Failure{Kind: "http_503", Message: "upstream", Retryable: true}, now)
	}
	require.False(t, run("u1", refresh.Success).Recovered, "no failure before")
	require.NotEqual(t, refresh.DecisionDisable, run("u2", fail).Plan)
	require.NotEqual(t, refresh.DecisionDisable, run("u3", fail).Plan)
	d := run("u4", refresh.Success)
	require.True(t, d.Recovered)
	events := refresh.NewEvents(m, d, m.RefreshAt)
	require.True(t, events[0].Recovered)
	require.Equal(t, []string{"succeeded", "recovered"}, events[0].Lifecycle())
	require.False(t, run("u5", refresh.Success).Recovered, "the streak has ended")
}
