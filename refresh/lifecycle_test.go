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

func TestParseEventNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want    string // want: String() of the set
		has, hasNot []string
	}{
		{in: "all", want: "all", has: refresh.LifecycleNames},
		{in: "none", want: "none", hasNot: refresh.LifecycleNames},
		{in: "failed,disabled", want: "failed,disabled", has: []string{"failed", "disabled"}, hasNot: []string{"started", "succeeded", "create"}},
		{in: " disabled , failed ", want: "failed,disabled"},
		{in: "-started,-succeeded", has: []string{"create", "failed", "recovered", "freshness_lost"}, hasNot: []string{"started", "succeeded"}},
	} {
		n, err := refresh.ParseEventNames(tc.in)
		require.NoError(t, err, tc.in)
		if tc.want != "" {
			require.Equal(t, tc.want, n.String(), tc.in)
		}
		for _, name := range tc.has {
			require.True(t, n.Has(name), "%s has %s", tc.in, name)
		}
		for _, name := range tc.hasNot {
			require.False(t, n.Has(name), "%s has not %s", tc.in, name)
		}
		again, err := refresh.ParseEventNames(n.String())
		require.NoError(t, err)
		require.Equal(t, n, again, "String reads back")
	}
	for in, want := range map[string]string{
		"":                  `must be all, none, or lifecycle names separated by commas, got ""`,
		"strated":           `must be all, none, or names separated by commas, each one of create, update, started,`,
		"failed,,disabled":  `got ""`,
		"failed,-succeeded": `must not mix names and -names (every name but some), got "failed,-succeeded"`,
		"-started,failed":   `must not mix names and -names`,
		"-all":              `got "-all"`,
	} {
		_, err := refresh.ParseEventNames(in)
		require.ErrorContains(t, err, want, in)
	}
	require.LessOrEqual(t, len(refresh.LifecycleNames), 64, "an EventNames holds a bit a name in a uint64")
	require.Equal(t, refresh.EventNames{}, refresh.EventNames{}.With("started"), "all stays all")
	require.Equal(t, "started,failed", refresh.NoEventNames().With("failed", "started", "no_such_name").String())
}

// An event is wanted when one of its names is subscribed, and kept for the
// outbox also when the Publisher revokes its attempt.
func TestEventNamesKeeps(t *testing.T) {
	t.Parallel()
	perCycle, err := refresh.ParseEventNames("-started,-succeeded")
	require.NoError(t, err)
	for _, tc := range []struct {
		names       refresh.EventNames
		e           refresh.Event
		wants, keep bool
	}{
		{refresh.EventNames{}, refresh.Event{Type: refresh.EventStart}, true, true},
		{perCycle, refresh.Event{Type: refresh.EventStart}, false, false},
		{perCycle, refresh.Event{Type: refresh.EventSuccess}, false, false},
		{perCycle, refresh.Event{Type: refresh.EventSuccess, Recovered: true}, true, true},
		{perCycle, refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionRetry}, true, true},
		{refresh.NoEventNames().With("retry_scheduled"), refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionRetry}, true, true},
		{refresh.NoEventNames().With("retry_scheduled"), refresh.Event{Type: refresh.EventFailure, Decision: refresh.DecisionDisable}, false, false},
		{refresh.NoEventNames(), refresh.Event{Type: refresh.EventTrigger}, false, false},
		{refresh.NoEventNames(), refresh.Event{Type: refresh.EventTrigger, AttemptUID: "u"}, false, true},
		{refresh.NoEventNames(), refresh.Event{Type: refresh.EventCancel, AttemptUID: "u"}, false, true},
		{refresh.NoEventNames(), refresh.Event{Type: refresh.EventDelete, AttemptUID: "u"}, false, true},
		{refresh.NoEventNames(), refresh.Event{Type: "some_new_event"}, true, true},
	} {
		require.Equal(t, tc.wants, tc.names.Wants(tc.e), "%s wants %s/%s", tc.names, tc.e.Type, tc.e.Decision)
		require.Equal(t, tc.keep, tc.names.Keeps(tc.e), "%s keeps %s/%s", tc.names, tc.e.Type, tc.e.Decision)
	}
	require.True(t, refresh.Event{Type: refresh.EventSuccess}.Propagates())
	require.False(t, refresh.Event{Type: refresh.EventSuccess, Unchanged: true}.Propagates())
	require.False(t, refresh.Event{Type: refresh.EventStart}.Propagates())
}
