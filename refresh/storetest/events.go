package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// EventsStore is a store whose outbox writes only the lifecycle names
// someone subscribes to.
type EventsStore interface {
	refresh.Store
	refresh.AuditLog
	SetEvents(names refresh.EventNames)
}

// RunEventNames checks that a store given the subscribed names writes an
// event to the outbox only if one of its names is subscribed, if the
// Publisher revokes its attempt, or if it is a success that changed the
// data of a model with dependents; and that the history and the audit are
// written whatever the names. newStore returns an empty store for one
// test.
func RunEventNames(t *testing.T, newStore func(t *testing.T) EventsStore) {
	t.Run("All", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		got := writeCycle(t, s)
		require.Equal(t, []string{"start b", "success b", "failure b", "trigger b", "success a", "create c", "success c"}, got,
			"without SetEvents every event is written")
	})
	t.Run("WithoutPerCycle", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		s.SetEvents(mustNames(t, "-started,-succeeded"))
		require.Equal(t, []string{"failure b", "trigger b", "success a", "create c"}, writeCycle(t, s),
			"b's start and success are not written; a's success is, for its dependent; the trigger revokes an attempt")
	})
	t.Run("WebhookAddsNames", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		s.SetEvents(mustNames(t, "none").With("started"))
		require.Equal(t, []string{"start b", "trigger b", "success a"}, writeCycle(t, s))
	})
	t.Run("Recovered", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		s.SetEvents(mustNames(t, "recovered"))
		ctx := context.Background()
		m := model("r", t0)
		events := []refresh.Event{
			{At: t0, ModelID: "r", Type: refresh.EventSuccess, Unchanged: true},
			{At: t0, ModelID: "r", Type: refresh.EventSuccess, Unchanged: true, Recovered: true},
		}
		require.NoError(t, s.Modify(ctx, []string{"r"}, func([]refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}, Events: events}, nil
		}))
		got := takeAll(t, s)
		require.Len(t, got, 1, "a success that ends a streak of failures is also recovered")
		require.True(t, got[0].Recovered)
	})
}

func mustNames(t *testing.T, s string) refresh.EventNames {
	t.Helper()
	n, err := refresh.ParseEventNames(s)
	require.NoError(t, err)
	return n
}

// writeCycle writes, in four batches, models a and b and a dependent of a;
// b's start, success and failure, and a trigger of b that supersedes an
// attempt; a's success; c's creation and success that changed no data;
// each with its history and audit. It checks the history and the audit,
// and returns the events taken, as "type model". (A store may write a
// success without dependents with one of the same batch that has some.)
func writeCycle(t *testing.T, s EventsStore) []string {
	t.Helper()
	ctx := context.Background()
	a, b, c, dep := model("a", t0), model("b", t0), model("c", t0), model("dep", t0)
	dep.Upstreams = []string{"a"}
	require.NoError(t, s.Modify(ctx, []string{"a", "b", "dep"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: a}, {Model: b}, {Model: dep}}}, nil
	}))
	end := t0.Add(time.Minute)
	ev := func(typ, id string) refresh.Event {
		return refresh.Event{At: t0, ModelID: id, Type: typ, AttemptNo: 1, AttemptUID: "u-" + id}
	}
	failure := ev(refresh.EventFailure, "b")
	failure.Decision, failure.Kind = refresh.DecisionRetry, "http_503"
	cycle := refresh.Batch{
		Changes: []refresh.Change{
			{Model: b, Attempt: &refresh.Attempt{ModelID: "b", UID: "u-b", AttemptNo: 1, StartedAt: t0, FinishedAt: end, Outcome: refresh.EventSuccess}},
		},
		Events: []refresh.Event{ev(refresh.EventStart, "b"), ev(refresh.EventSuccess, "b"), failure, ev(refresh.EventTrigger, "b")},
		Audit:  []refresh.AuditEntry{{ModelID: "b", At: t0, Actor: "ops", Action: refresh.ActionTrigger}},
	}
	require.NoError(t, s.Modify(ctx, []string{"b"}, func([]refresh.Model) (refresh.Batch, error) { return cycle, nil }))
	require.NoError(t, s.Modify(ctx, []string{"a"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{
			Changes: []refresh.Change{{Model: a, Attempt: &refresh.Attempt{ModelID: "a", UID: "u-a", AttemptNo: 1, StartedAt: t0, FinishedAt: end, Outcome: refresh.EventSuccess}}},
			Events:  []refresh.Event{ev(refresh.EventSuccess, "a")},
		}, nil
	}))
	unchanged := ev(refresh.EventSuccess, "c")
	unchanged.Unchanged = true
	require.NoError(t, s.Modify(ctx, []string{"c"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: c}}, Events: []refresh.Event{ev(refresh.EventCreate, "c"), unchanged},
			Audit: []refresh.AuditEntry{{ModelID: "c", At: t0, Actor: "ops", Action: refresh.AuditCreate}}}, nil
	}))

	for _, id := range []string{"a", "b"} {
		h, err := s.History(ctx, id, time.Time{}, 10)
		require.NoError(t, err)
		require.Len(t, h, 1, "the history of %s is written whatever the names", id)
		require.Equal(t, refresh.EventSuccess, h[0].Outcome)
	}
	for _, id := range []string{"b", "c"} {
		entries, err := s.Audit(ctx, id, 0, 10)
		require.NoError(t, err)
		require.Len(t, entries, 1, "the audit of %s is written whatever the names", id)
	}
	var out []string
	for _, e := range takeAll(t, s) {
		out = append(out, e.Type+" "+e.ModelID)
	}
	return out
}
