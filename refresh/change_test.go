package refresh

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var changeNow = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// changeModel returns an on-demand model with a timeout of 1h and retries
// after 0s, 1m and 5m.
func changeModel(t *testing.T, id string) Model {
	t.Helper()
	p, err := ParsePolicy([]byte(`{"timeout": "1h", "retry": {"delays": ["0s", "1m", "5m"]}}`), DefaultLimits())
	require.NoError(t, err)
	return Model{ID: id, Queue: "default", Policy: p, CreatedAt: changeNow.Add(-24 * time.Hour)}
}

// changeRunning returns model id running attempt 2 ("u1"), started a minute
// before changeNow.
func changeRunning(t *testing.T, id string) Model {
	t.Helper()
	m := changeModel(t, id)
	m.AttemptNo = 1
	m.RefreshAt = changeNow.Add(-time.Minute)
	m, d := Start(m, "u1", m.RefreshAt)
	require.Equal(t, EventStart, d.Event)
	return m
}

func TestNewEvent(t *testing.T) {
	t.Parallel()
	before := changeRunning(t, "m1")
	after, d := Failed(before, Failure{Kind: "http_503", Message: "upstream 503", Retryable: true}, changeNow)
	require.Equal(t, DecisionRetry, d.Plan)

	require.Equal(t, Event{
		At: changeNow, ModelID: "m1", Type: EventFailure, Decision: DecisionRetry,
		Kind: "http_503", Message: "upstream 503", Delay: time.Minute,
		AttemptNo: 2, AttemptUID: "u1", RefreshAt: changeNow.Add(time.Minute),
	}, NewEvent(after, d, changeNow))

	after, d = Failed(before, Failure{Kind: "validation", Message: "bad input", Retryable: true}, changeNow)
	e := NewEvent(after, d, changeNow)
	require.Equal(t, DecisionDisable, e.Decision)
	require.Equal(t, "Refresh disabled after 1 failed attempt(s).", e.Reason)
	require.Equal(t, "bad input", e.Message, "the worker's message goes with the event, for operators")
	require.True(t, e.Disabled)
	require.True(t, e.RefreshAt.IsZero())

	started := changeModel(t, "m2")
	started.RefreshAt = changeNow
	started, d = Start(started, "u7", changeNow)
	require.Equal(t, Event{
		At: changeNow, ModelID: "m2", Type: EventStart, AttemptNo: 1, AttemptUID: "u7",
		RefreshAt: changeNow.Add(time.Hour), DeadlineAt: changeNow.Add(time.Hour),
	}, NewEvent(started, d, changeNow))
}

func TestHistoryRow(t *testing.T) {
	t.Parallel()
	started := changeNow.Add(-time.Minute)
	deadline := started.Add(time.Hour)
	// ended is the row of attempt u1 of changeRunning, finished at changeNow.
	ended := func(outcome string) *Attempt {
		return &Attempt{ModelID: "m1", UID: "u1", AttemptNo: 2, StartedAt: started, DeadlineAt: deadline,
			FinishedAt: changeNow, Outcome: outcome}
	}
	outcome := func(typ string) Outcome {
		return Outcome{AttemptUID: "u1", Type: typ, Kind: "http_503", Message: "upstream 503"}
	}
	tests := []struct {
		name  string
		apply func(t *testing.T) (before, after Model, d Decision)
		want  *Attempt
	}{
		{name: "start inserts the row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeModel(t, "m1")
				m.RefreshAt = changeNow
				after, d := Start(m, "u9", changeNow)
				return m, after, d
			},
			want: &Attempt{ModelID: "m1", UID: "u9", AttemptNo: 1, StartedAt: changeNow, DeadlineAt: changeNow.Add(time.Hour)}},
		{name: "success completes it",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := ApplyOutcome(m, outcome(OutcomeSuccess), changeNow)
				return m, after, d
			},
			want: ended(EventSuccess)},
		{name: "failure completes it with the error and the plan",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := ApplyOutcome(m, outcome(OutcomeFailure), changeNow)
				return m, after, d
			},
			want: func() *Attempt {
				a := ended(EventFailure)
				a.ErrorKind, a.ErrorMessage, a.Decision, a.Delay = "http_503", "upstream 503", DecisionRetry, time.Minute
				return a
			}()},
		{name: "timeout completes it",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				m.DeadlineAt = changeNow // a 1m attempt: the timeout was shorter when it started
				after, d := Timeout(m, changeNow)
				return m, after, d
			},
			want: func() *Attempt {
				a := ended(EventTimeout)
				a.DeadlineAt = changeNow
				a.ErrorKind, a.ErrorMessage, a.Decision, a.Delay = KindTimeout, "attempt 2 did not finish within 1m", DecisionRetry, time.Minute
				return a
			}()},
		{name: "trigger supersedes a running attempt",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := Trigger(m, changeNow)
				return m, after, d
			},
			want: ended(AttemptSuperseded)},
		{name: "cancel of a running attempt",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := Cancel(m, changeNow)
				return m, after, d
			},
			want: ended(AttemptCancelled)},
		{name: "trigger of an idle model: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeModel(t, "m1")
				after, d := Trigger(m, changeNow)
				return m, after, d
			}},
		{name: "cancel of an idle model: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeModel(t, "m1")
				m.AttemptNo, m.RefreshAt = 2, changeNow.Add(time.Minute)
				after, d := Cancel(m, changeNow)
				return m, after, d
			}},
		{name: "stale outcome: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				o := outcome(OutcomeSuccess)
				o.AttemptUID = "u0"
				after, d := ApplyOutcome(m, o, changeNow)
				return m, after, d
			}},
		{name: "status: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := ApplyOutcome(m, outcome(OutcomeStatus), changeNow)
				return m, after, d
			}},
		{name: "pause of a running model: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := Pause(m)
				return m, after, d
			}},
		{name: "no event: no row",
			apply: func(t *testing.T) (Model, Model, Decision) {
				m := changeRunning(t, "m1")
				after, d := Timeout(m, changeNow)
				require.Empty(t, d.Event)
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

func TestChangesAdd(t *testing.T) {
	t.Parallel()

	t.Run("no event records nothing", func(t *testing.T) {
		t.Parallel()
		var c changes
		m := changeRunning(t, "m1")
		after, d := Timeout(m, changeNow)
		c.add(m, after, d, changeNow)
		require.Empty(t, c.Changes)
		require.Empty(t, c.Events)
	})

	t.Run("stale records an event, no write", func(t *testing.T) {
		t.Parallel()
		var c changes
		m := changeRunning(t, "m1")
		after, d := ApplyOutcome(m, Outcome{AttemptUID: "u0", Type: OutcomeSuccess}, changeNow)
		c.add(m, after, d, changeNow)
		require.Empty(t, c.Changes)
		require.Equal(t, []Event{NewEvent(after, d, changeNow)}, c.Events)
	})

	t.Run("one change per model, in order", func(t *testing.T) {
		t.Parallel()
		var c changes
		a, b := changeModel(t, "a"), changeModel(t, "b")
		a.RefreshAt, b.RefreshAt = changeNow, changeNow
		a2, da := Start(a, "ua", changeNow)
		b2, db := Start(b, "ub", changeNow)
		c.add(a, a2, da, changeNow)
		c.add(b, b2, db, changeNow)
		require.Equal(t, []Change{
			{Model: a2, Decision: da, Attempt: historyRow(a, a2, da, changeNow)},
			{Model: b2, Decision: db, Attempt: historyRow(b, b2, db, changeNow)},
		}, c.Changes)
		require.Equal(t, []Event{NewEvent(a2, da, changeNow), NewEvent(b2, db, changeNow)}, c.Events)
	})

	t.Run("the last state wins and keeps the attempt row", func(t *testing.T) {
		t.Parallel()
		var c changes
		m0 := changeRunning(t, "m1")
		m1, d1 := ApplyOutcome(m0, Outcome{AttemptUID: "u1", Type: OutcomeStatus, Message: "50%"}, changeNow)
		m2, d2 := ApplyOutcome(m1, Outcome{AttemptUID: "u1", Type: OutcomeSuccess}, changeNow)
		m3, d3 := Pause(m2)
		c.add(m0, m1, d1, changeNow)
		c.add(m1, m2, d2, changeNow)
		c.add(m2, m3, d3, changeNow)
		require.Len(t, c.Changes, 1)
		require.Equal(t, m3, c.Changes[0].Model)
		require.Equal(t, d3, c.Changes[0].Decision)
		require.Equal(t, historyRow(m1, m2, d2, changeNow), c.Changes[0].Attempt, "the success row is not lost")
		require.Len(t, c.Events, 3)
		require.Equal(t, []string{EventStatus, EventSuccess, EventPause},
			[]string{c.Events[0].Type, c.Events[1].Type, c.Events[2].Type})
	})

	t.Run("a later row replaces an earlier one", func(t *testing.T) {
		t.Parallel()
		var c changes
		m0 := changeModel(t, "m1")
		m0.RefreshAt = changeNow
		m1, d1 := Start(m0, "u1", changeNow)
		m2, d2 := Trigger(m1, changeNow)
		c.add(m0, m1, d1, changeNow)
		c.add(m1, m2, d2, changeNow)
		require.Len(t, c.Changes, 1)
		require.Equal(t, m2, c.Changes[0].Model)
		require.Equal(t, AttemptSuperseded, c.Changes[0].Attempt.Outcome)
	})
}
