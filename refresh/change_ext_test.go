package refresh

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// extModel returns changeModel with a max_age of 2h, debounced triggers
// (quiet 30s, max_wait 5m), max_snooze 1h and the given id.
func extModel(t *testing.T, id string) Model {
	t.Helper()
	p, err := ParsePolicy([]byte(`{"timeout": "1h", "retry": {"delays": ["0s", "1m", "5m"]}, "max_age": "2h",
		"trigger_debounce": {"quiet": "30s", "max_wait": "5m"}, "max_snooze": "1h"}`), DefaultLimits())
	require.NoError(t, err)
	m := changeModel(t, id)
	m.Policy = p
	return m
}

func extRunning(t *testing.T, id string) Model {
	t.Helper()
	m := extModel(t, id)
	m.AttemptNo, m.RefreshAt = 1, changeNow.Add(-time.Minute)
	m, d := Start(m, "u1", m.RefreshAt)
	require.Equal(t, EventStart, d.Event)
	return m
}

func TestHistoryRowExtensions(t *testing.T) {
	t.Parallel()
	started := changeNow.Add(-time.Minute)
	ended := func(outcome string) *Attempt {
		return &Attempt{ModelID: "m1", UID: "u1", AttemptNo: 2, StartedAt: started, DeadlineAt: started.Add(time.Hour),
			FinishedAt: changeNow, Outcome: outcome}
	}
	tests := []struct {
		name  string
		apply func(t *testing.T) (before, after Model, d Decision)
		want  *Attempt
	}{
		{name: "a snooze completes the row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := extRunning(t, "m1")
				after, d := ApplyOutcome(m, Outcome{AttemptUID: "u1", Type: OutcomeSnooze, For: Duration(time.Minute)}, changeNow)
				return m, after, d
			},
			want: ended(AttemptSnoozed)},
		{name: "an unchanged success completes it",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := extRunning(t, "m1")
				after, d := ApplyOutcome(m, Outcome{AttemptUID: "u1", Type: OutcomeSuccess, Unchanged: true}, changeNow)
				return m, after, d
			},
			want: ended(AttemptUnchanged)},
		{name: "a debounce that supersedes the running attempt",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := extRunning(t, "m1")
				m, _ = Trigger(m, changeNow.Add(-30*time.Second))
				after, d := ApplyDebounce(m, changeNow)
				require.Equal(t, EventDebounce, d.Event)
				return m, after, d
			},
			want: ended(AttemptSuperseded)},
		{name: "a debounced trigger of a running model: no row yet",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := extRunning(t, "m1")
				after, d := Trigger(m, changeNow)
				return m, after, d
			}},
		{name: "freshness lost: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := extRunning(t, "m1")
				after, d := LoseFreshness(m, changeNow)
				require.Equal(t, EventFreshnessLost, d.Event)
				return m, after, d
			}},
		{name: "a wait for a slot: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := extModel(t, "m1")
				m.RefreshAt = changeNow
				after, d := WaitForSlot(m, TickInput{FullLimit: Limit{Kind: LimitQueue, Key: "default", MaxRunning: 1}}, changeNow)
				return m, after, d
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, after, d := tt.apply(t)
			got := historyRow(before, after, d, changeNow)
			if tt.want == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, *tt.want, *got)
		})
	}
}

// TestNewEventsExtensions checks that the events carry what section 6
// adds, and that a success that ends a freshness episode publishes two
// events.
func TestNewEventsExtensions(t *testing.T) {
	t.Parallel()
	instant := changeNow.Add(-time.Hour)

	m := extRunning(t, "m1")
	m.OverdueSince = instant
	after, d := ApplyOutcome(m, Outcome{AttemptUID: "u1", Type: OutcomeSuccess, Unchanged: true, ArrivedAt: changeNow.Add(-time.Second)}, changeNow)
	events := NewEvents(after, d, changeNow)
	require.Len(t, events, 2)
	require.Equal(t, EventSuccess, events[0].Type)
	require.True(t, events[0].Unchanged)
	require.Equal(t, Event{
		At: changeNow.Add(-time.Second), ModelID: "m1", Type: EventFreshnessRestored, AttemptNo: 0,
		OverdueSince: instant, OverdueFor: time.Hour - time.Second, Disabled: false,
	}, events[1])
	require.Equal(t, "m1:freshness_restored:"+instant.Format(time.RFC3339), events[1].FreshnessKey())

	var c changes
	c.add(m, after, d, changeNow)
	require.Equal(t, events, c.Events)
	require.Len(t, c.Changes, 1)

	lost, ld := LoseFreshness(extModel(t, "m2"), changeNow)
	require.Equal(t, []Event{{
		At: changeNow, ModelID: "m2", Type: EventFreshnessLost, OverdueSince: changeNow.Add(-22 * time.Hour),
		State: PhaseIdle,
	}}, NewEvents(lost, ld, changeNow))

	trig, td := Trigger(extModel(t, "m3"), changeNow)
	e := NewEvent(trig, td, changeNow)
	require.Equal(t, changeNow.Add(30*time.Second), e.DebounceAt)
	require.Empty(t, e.AttemptUID)

	up := extModel(t, "m4")
	up.Policy.TriggerDebounce = Debounce{}
	up.Upstreams = []string{"orders"}
	ut, ud := UpstreamTrigger(up, map[string]Upstream{"orders": {ID: "orders", LastChangedAt: changeNow}}, "orders", changeNow)
	e = NewEvent(ut, ud, changeNow)
	require.Equal(t, CauseUpstream, e.Cause)
	require.Equal(t, "orders", e.Upstream)

	noop, nd := Enable(extModel(t, "m5"), changeNow)
	require.Empty(t, NewEvents(noop, nd, changeNow), "an action that changed nothing publishes nothing")
}

func TestEventRevocation(t *testing.T) {
	t.Parallel()
	deadline := changeNow.Add(time.Hour)
	tests := []struct {
		typ, uid string
		want     string // reason; "": none
	}{
		{EventTrigger, "u1", RevokedSuperseded},
		{EventDebounce, "u1", RevokedSuperseded},
		{EventCancel, "u1", RevokedCancelled},
		{EventDelete, "u1", RevokedDeleted},
		{EventTrigger, "", ""},
		{EventDebounce, "", ""},
		{EventSuccess, "u1", ""},
		{EventSnooze, "u1", ""},
		{EventSkip, "", ""},
	}
	for _, tt := range tests {
		r, ok := EventRevocation(Event{ModelID: "m1", Type: tt.typ, AttemptUID: tt.uid, AttemptDeadlineAt: deadline})
		require.Equal(t, tt.want != "", ok, tt.typ)
		if ok {
			require.Equal(t, Revocation{ModelID: "m1", AttemptUID: "u1", Reason: tt.want, DeadlineAt: deadline}, r)
		}
	}
	// The Publisher's own list agrees with it.
	for _, tt := range tests {
		e := Event{ModelID: "m1", Type: tt.typ, AttemptUID: tt.uid, AttemptDeadlineAt: deadline}
		if tt.typ == EventDebounce {
			continue // revocations() learns the debounce when the Publisher is wired to EventRevocation
		}
		r, ok := EventRevocation(e)
		got := revocations([]Event{e})
		if !ok {
			require.Empty(t, got)
			continue
		}
		require.Equal(t, []Revocation{r}, got)
	}
}

func TestMetricsCountExtensions(t *testing.T) {
	t.Parallel()
	var m Metrics
	for _, e := range []Event{
		{Type: EventSuccess}, {Type: EventSuccess, Unchanged: true}, {Type: EventSnooze}, {Type: EventSkip},
		{Type: EventDebounce}, {Type: EventTrigger}, {Type: EventTrigger}, {Type: EventWait},
		{Type: EventFreshnessLost}, {Type: EventFreshnessRestored},
		{Type: EventFailure, Kind: KindSnoozedTooLong, Decision: DecisionRetry},
	} {
		m.count(e)
	}
	require.Equal(t, int64(2), m.Succeeded.Load())
	require.Equal(t, int64(1), m.Unchanged.Load())
	require.Equal(t, int64(1), m.Snoozed.Load())
	require.Equal(t, int64(1), m.Skipped.Load())
	require.Equal(t, int64(1), m.Debounced.Load())
	require.Equal(t, int64(2), m.Triggers.Load())
	require.Equal(t, int64(1), m.SlotWaits.Load())
	require.Equal(t, int64(1), m.FreshnessLost.Load())
	require.Equal(t, int64(1), m.FreshnessRestored.Load())
	require.Equal(t, int64(1), m.Failed.Load())
	require.Equal(t, int64(1), m.Retried.Load())
	require.Zero(t, m.Started.Load())
}
