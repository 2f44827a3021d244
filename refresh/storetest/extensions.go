package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The tests of the state and queries of docs/policy.md.

// extended returns a model with every field of the extensions set.
func extended(id string) refresh.Model {
	m := model(id, t0.Add(time.Hour))
	m.Upstreams, m.UpstreamsMode = []string{"orders", "customers"}, refresh.UpstreamsAny
	m.Policy.MaxAge = refresh.Duration(6 * time.Hour)
	m.State.LastChangedAt = t0.Add(-time.Hour)
	m.State.DebounceAt, m.State.DebounceSince, m.State.DebounceCause = t0.Add(time.Minute), t0.Add(-time.Minute), refresh.CauseUpstream
	m.State.OverdueSince = t0.Add(-2 * time.Hour)
	m.State.SnoozedSince = t0.Add(-3 * time.Hour)
	m.State.WaitingForSlot, m.State.WaitingLimit, m.State.OffSchedule = true, "queue:tables", true
	return m
}

func testExtensionFields(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	m := extended("ext")
	put(t, s, m)
	got, err := s.Get(ctx, "ext")
	require.NoError(t, err)
	require.Equal(t, normal(t, m), normal(t, got))

	// An update changes each field, back to zero too.
	for _, change := range []func(*refresh.Model){
		func(m *refresh.Model) { m.Upstreams = []string{"a"} },
		func(m *refresh.Model) { m.UpstreamsMode = "" },
		func(m *refresh.Model) { m.LastChangedAt = t0 },
		func(m *refresh.Model) { m.DebounceAt, m.DebounceSince, m.DebounceCause = time.Time{}, time.Time{}, "" },
		func(m *refresh.Model) { m.OverdueSince = time.Time{} },
		func(m *refresh.Model) { m.SnoozedSince = time.Time{} },
		func(m *refresh.Model) { m.WaitingLimit = "prefix:x" },
		func(m *refresh.Model) { m.WaitingForSlot, m.WaitingLimit, m.OffSchedule = false, "", false },
		func(m *refresh.Model) { m.Upstreams = nil },
	} {
		change(&m)
		want := m
		require.NoError(t, s.Modify(ctx, []string{"ext"}, func(found []refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: want}}}, nil
		}))
		got, err := s.Get(ctx, "ext")
		require.NoError(t, err)
		require.Equal(t, normal(t, want), normal(t, got))
	}
}

// claimIDs claims up to limit models at now and returns their ids,
// writing nothing.
func claimIDs(t *testing.T, s refresh.Store, now time.Time, limit int) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimDue(context.Background(), now, limit, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		ids = nil
		for _, m := range due {
			ids = append(ids, m.ID)
		}
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
	return ids
}

func testClaimDueByDueAt(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	// A debounce window due before refresh_at; a paused model's window
	// too.
	debounced := model("debounced", t0.Add(time.Hour))
	debounced.DebounceAt, debounced.DebounceSince = t0.Add(-time.Minute), t0.Add(-2*time.Minute)
	pausedWindow := model("paused-window", time.Time{})
	pausedWindow.Paused = true
	pausedWindow.DebounceAt, pausedWindow.DebounceSince = t0.Add(-30*time.Second), t0.Add(-time.Minute)
	// The overdue instant (created_at + max_age) of a model that never
	// succeeded, before its refresh_at; the same with its episode open is
	// not due.
	overdue := model("overdue", t0.Add(time.Hour))
	overdue.CreatedAt = t0.Add(-2 * time.Hour)
	overdue.Policy.MaxAge = refresh.Duration(time.Hour)
	open := overdue
	open.ID, open.OverdueSince = "overdue-open", t0.Add(-time.Hour)
	put(t, s, debounced, pausedWindow, overdue, open, model("later", t0.Add(time.Minute)))

	require.Equal(t, []string{"overdue", "debounced", "paused-window"}, claimIDs(t, s, t0, 10))
	next, ok, err := s.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, next.Equal(t0.Add(-time.Hour)), "got %s", next)

	// A write that moves the due instant is claimed by its new one.
	require.NoError(t, s.Modify(ctx, []string{"overdue"}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.OverdueSince = t0.Add(-time.Hour)
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	require.Equal(t, []string{"debounced", "paused-window"}, claimIDs(t, s, t0, 10))
}

func testClaimWaitingLast(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	var ms []refresh.Model
	for _, id := range []string{"w1", "w2"} {
		m := model(id, t0.Add(-time.Hour))
		m.WaitingForSlot, m.WaitingLimit = true, "queue:tables"
		ms = append(ms, m)
	}
	ms = append(ms, model("fresh", t0.Add(-time.Minute)))
	put(t, s, ms...)
	_, err := s.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxRunning: 1}, false)
	require.NoError(t, err)
	// Models that do not wait come first, whatever their due time; the
	// limit's one free slot brings the earliest waiting model too, though
	// the batch is full.
	require.Equal(t, []string{"fresh", "w1"}, claimIDs(t, s, t0, 1))
	require.Equal(t, []string{"fresh", "w1", "w2"}, claimIDs(t, s, t0, 10))
	// NextDue leaves waiting models out.
	next, ok, err := s.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, next.Equal(t0.Add(-time.Minute)), "got %s", next)
}

// A batch full of newly due models still brings, for each limit with
// free slots, that many of the earliest models waiting for it (by
// refresh_at), and the models waiting for a limit that no longer exists;
// room left in the batch is filled with waiting models by refresh_at.
func testSlotsToEarliest(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	waiting := func(id, queue, limit string, refreshAt time.Time) refresh.Model {
		m := model(id, refreshAt)
		m.Queue, m.WaitingForSlot, m.WaitingLimit = queue, true, limit
		return m
	}
	put(t, s,
		running("acme-r", "tables"), running("ex-r", "exports"),
		waiting("acme-w0", "exports", "queue:exports", t0.Add(-3*time.Hour)), // exports is full
		waiting("acme-w2", "tables", "prefix:acme-", t0.Add(-time.Hour)),
		waiting("acme-w1", "tables", "prefix:acme-", t0.Add(-2*time.Hour)),
		waiting("orphan", "tables", "queue:removed", t0),
		model("n1", t0.Add(-time.Minute)), model("n2", t0.Add(-time.Minute)))
	putLimits(t, s,
		refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2},
		refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 1},
		refresh.Limit{Kind: refresh.LimitQueue, Key: "unused", MaxRunning: 1})
	claim := func(limit int) ([]string, refresh.Slots) {
		var ids []string
		var slots refresh.Slots
		_, err := s.ClaimDue(ctx, t0, limit, func(due []refresh.Model, sl refresh.Slots) (refresh.Batch, error) {
			for _, m := range due {
				ids = append(ids, m.ID)
			}
			slots = sl
			return refresh.Batch{}, nil
		})
		require.NoError(t, err)
		return ids, slots
	}
	ids, slots := claim(2)
	require.ElementsMatch(t, []string{"n1", "n2", "acme-w1", "orphan"}, ids)
	require.Equal(t, []refresh.Limit{{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2}, {Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 1}}, slots.Limits)
	require.Equal(t, []int{1, 1}, slots.Running)
	ids, _ = claim(4)
	require.ElementsMatch(t, []string{"n1", "n2", "acme-w0", "acme-w1", "orphan"}, ids)
	ids, _ = claim(10)
	require.ElementsMatch(t, []string{"n1", "n2", "acme-w0", "acme-w1", "acme-w2", "orphan"}, ids)
}

// running returns a model of queue whose attempt 1 runs since t0.
func running(id, queue string) refresh.Model {
	m := model(id, t0.Add(time.Hour))
	m.Queue, m.AttemptUID, m.AttemptNo, m.StartedAt, m.DeadlineAt = queue, "uid-"+id, 1, t0, t0.Add(time.Hour)
	return m
}

// putLimits creates or replaces limits.
func putLimits(t *testing.T, s refresh.Store, limits ...refresh.Limit) {
	t.Helper()
	for _, l := range limits {
		_, err := s.PutLimit(context.Background(), l, false)
		require.NoError(t, err)
	}
}

func testSlots(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	due := model("acme-due", t0)
	put(t, s, running("acme-1", "tables"), running("acme-2", "exports"), running("other", "tables"), due, model("x-due", t0))

	// No limit: no slots.
	_, err := s.ClaimDue(ctx, t0, 10, func(_ []refresh.Model, slots refresh.Slots) (refresh.Batch, error) {
		require.Empty(t, slots.Limits)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)

	putLimits(t, s,
		refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxRunning: 5},
		refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2},
		refresh.Limit{Kind: refresh.LimitQueue, Key: "unused", MaxRunning: 1})
	_, err = s.ClaimDue(ctx, t0.Add(time.Second), 10, func(due []refresh.Model, slots refresh.Slots) (refresh.Batch, error) {
		require.Len(t, due, 2)
		require.Equal(t, []refresh.Limit{{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2}, {Kind: refresh.LimitQueue, Key: "tables", MaxRunning: 5}}, slots.Limits)
		require.Equal(t, []int{2, 2}, slots.Running)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
}

func testLimits(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	got, err := s.Limits(ctx)
	require.NoError(t, err)
	require.Empty(t, got)

	q := refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5}
	p := refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2}
	for _, l := range []refresh.Limit{q, p} {
		created, err := s.PutLimit(ctx, l, true)
		require.NoError(t, err)
		require.True(t, created)
	}
	// onlyNew keeps what exists; a plain put replaces it.
	created, err := s.PutLimit(ctx, refresh.Limit{Kind: q.Kind, Key: q.Key, MaxRunning: 9}, true)
	require.NoError(t, err)
	require.False(t, created)
	q.MaxRunning = 7
	_, err = s.PutLimit(ctx, q, false)
	require.NoError(t, err)
	got, err = s.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, []refresh.Limit{p, q}, got)

	_, err = s.PutLimit(ctx, refresh.Limit{Kind: "host", Key: "x", MaxRunning: -1}, false)
	requireCode(t, refresh.EINVALID, err)
	require.ErrorContains(t, err, "kind: must be")
	require.ErrorContains(t, err, "max_running: must be >= 1 (to start none of the models, pause them), or left out with max_starts set, got -1")

	require.NoError(t, s.DeleteLimit(ctx, p.Kind, p.Key))
	requireCode(t, refresh.ENOTFOUND, s.DeleteLimit(ctx, p.Kind, p.Key))
	got, err = s.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, []refresh.Limit{q}, got)
}

func testDependentsUpstreams(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	orders := model("orders", t0)
	orders.LastChangedAt = t0.Add(-time.Hour)
	orders.DisabledAt, orders.DisabledReason = t0, "Refresh disabled after 3 failed attempt(s): upstream 503"
	report, summary := model("report", t0), model("summary", t0)
	report.Upstreams = []string{"orders", "customers"}
	summary.Upstreams = []string{"report"}
	put(t, s, orders, report, summary, model("alone", t0))

	deps, err := s.Dependents(ctx, []string{"orders", "customers"})
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"report": {"orders", "customers"}}, deps)
	deps, err = s.Dependents(ctx, []string{"report", "orders"})
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"report": {"orders", "customers"}, "summary": {"report"}}, deps)

	ups, err := s.Upstreams(ctx, []string{"orders", "customers"})
	require.NoError(t, err)
	require.Equal(t, map[string]refresh.Upstream{"orders": {
		ID: "orders", LastChangedAt: t0.Add(-time.Hour), Disabled: true,
		DisabledReason: "Refresh disabled after 3 failed attempt(s): upstream 503",
	}}, ups)
}

func testUpstreamCycle(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	a, b := model("a", t0), model("b", t0)
	a.Upstreams, b.Upstreams = []string{"b"}, []string{"c"}
	put(t, s, a, b)
	c := model("c", t0)
	c.Upstreams = []string{"a"}
	err := s.Modify(ctx, []string{"c"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: c}}}, nil
	})
	requireCode(t, refresh.EINVALID, err)
	require.ErrorContains(t, err, "upstreams: would make a cycle: c → a → b → c")
	_, err = s.Get(ctx, "c")
	requireCode(t, refresh.ENOTFOUND, err)

	// Without the edge back, it is written.
	c.Upstreams = []string{"missing"}
	put(t, s, c)
}

func testCounts(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	overdue, waiting := model("overdue", t0), model("waiting", t0)
	overdue.OverdueSince = t0
	waiting.WaitingForSlot = true
	both := extended("both")
	put(t, s, overdue, waiting, both, model("plain", t0))
	all, byQueue, err := s.CountModels(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, int64(2), all.Overdue)
	require.Equal(t, int64(2), all.WaitingForSlot)
	require.Equal(t, int64(4), all.Total())
	var inQueues int64
	for _, c := range byQueue {
		inQueues += c.Total()
	}
	require.Equal(t, int64(4), inQueues, "each model counted in its queue")
}
