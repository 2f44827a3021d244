package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
	"github.com/freshen-dev/freshen/refresh/storetest"
)

var t0 = time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) refresh.Store { return setup(t).store })
}

func model(id string, refreshAt time.Time) refresh.Model {
	return refresh.Model{
		ID: id, Queue: "tables", Payload: json.RawMessage(`{"n": 1}`),
		Policy:    refresh.Policy{Timeout: refresh.Duration(time.Hour), OnExhausted: refresh.ExhaustedDisable},
		CreatedAt: t0, State: refresh.State{RefreshAt: refreshAt},
	}
}

// put creates or replaces models in one Modify.
func put(t *testing.T, s *postgres.Store, ms ...refresh.Model) {
	t.Helper()
	ids := make([]string, len(ms))
	changes := make([]refresh.Change, len(ms))
	for i, m := range ms {
		ids[i], changes[i] = m.ID, refresh.Change{Model: m}
	}
	require.NoError(t, s.Modify(context.Background(), ids, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: changes}, nil
	}))
}

func ids(ms []refresh.Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// A claim that holds its rows does not block a second claim, which gets
// the other due models.
func TestClaimDueSkipsLocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	var all []refresh.Model
	for i := range 10 {
		all = append(all, model(fmt.Sprintf("m%d", i), t0.Add(-time.Duration(i)*time.Minute)))
	}
	put(t, s, all...)

	inside, release := make(chan []string), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.ClaimDue(ctx, t0, 4, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			inside <- ids(due)
			<-release
			return refresh.Batch{}, nil
		})
		done <- err
	}()
	first := <-inside

	var second []string
	n, err := s.ClaimDue(ctx, t0, 100, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		second = ids(due)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
	close(release)
	require.NoError(t, <-done)

	require.Equal(t, []string{"m9", "m8", "m7", "m6"}, first)
	require.Equal(t, 6, n)
	require.Equal(t, []string{"m5", "m4", "m3", "m2", "m1", "m0"}, second)
}

// The store does not fence outcomes: Modify waits for the row a claim
// holds and passes the committed state to fn, which compares attempt uids.
func TestModifySeesCommittedClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	m := model("m", t0)
	m.AttemptUID, m.AttemptNo, m.DeadlineAt = "u1", 1, t0
	put(t, s, m)

	inside, release := make(chan struct{}), make(chan struct{})
	claimed := make(chan error, 1)
	go func() {
		_, err := s.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			close(inside)
			<-release
			m := due[0] // timed out, then started again
			m.AttemptUID, m.AttemptNo, m.DeadlineAt, m.RefreshAt = "u2", 2, t0.Add(time.Hour), t0.Add(time.Hour)
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
		})
		claimed <- err
	}()
	<-inside

	var seen []string
	modified := make(chan error, 1)
	go func() {
		// A late outcome of attempt u1.
		modified <- s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
			seen = append(seen, found[0].AttemptUID)
			if found[0].AttemptUID != "u1" {
				return refresh.Batch{}, nil // stale
			}
			m := found[0]
			m.AttemptUID, m.RefreshAt = "", time.Time{}
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
		})
	}()
	close(release)
	require.NoError(t, <-claimed)
	require.NoError(t, <-modified)

	require.Equal(t, []string{"u2"}, seen)
	got, err := s.Get(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, "u2", got.AttemptUID)
}

// When another caller creates a model that fn was about to create, Modify
// runs fn again with the model found, instead of overwriting it.
func TestModifyConcurrentCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store

	inside, release := make(chan struct{}, 1), make(chan struct{})
	var calls [][]string
	done := make(chan error, 1)
	go func() {
		done <- s.Modify(ctx, []string{"new"}, func(found []refresh.Model) (refresh.Batch, error) {
			calls = append(calls, ids(found))
			if len(found) == 0 {
				inside <- struct{}{}
				<-release
				return refresh.Batch{Changes: []refresh.Change{{Model: model("new", t0)}}}, nil
			}
			m := found[0]
			m.AttemptNo++
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
		})
	}()
	<-inside
	other := model("new", t0)
	other.Queue = "other"
	put(t, s, other)
	close(release)
	require.NoError(t, <-done)

	require.Equal(t, [][]string{{}, {"new"}}, calls)
	got, err := s.Get(ctx, "new")
	require.NoError(t, err)
	require.Equal(t, "other", got.Queue, "the other caller's model was kept")
	require.Equal(t, 1, got.AttemptNo, "and changed by the second run of fn")
}

// Several changes of one model, or of one attempt, in one batch: the last
// one wins.
func TestWriteLastChangeWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	put(t, s, model("m", t0))

	start := refresh.Attempt{ModelID: "m", UID: "u1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}
	end := start
	end.FinishedAt, end.Outcome = t0.Add(time.Minute), refresh.OutcomeSuccess
	require.NoError(t, s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
		a, b := found[0], found[0]
		a.AttemptNo, b.AttemptNo = 1, 2
		return refresh.Batch{Changes: []refresh.Change{{Model: a, Attempt: &start}, {Model: b, Attempt: &end}}}, nil
	}))
	got, err := s.Get(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, 2, got.AttemptNo)
	h, err := s.History(ctx, "m", time.Time{}, 0)
	require.NoError(t, err)
	require.Len(t, h, 1)
	require.Equal(t, refresh.OutcomeSuccess, h[0].Outcome)
}

// Claims of a few thousand models, batch after batch, each writing its
// models and history rows in a few statements.
func TestClaimDueBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.pool.Exec(ctx, `INSERT INTO models (id, queue, created_at, refresh_at)
		SELECT 'm' || lpad(i::text, 5, '0'), 'q', $1::timestamptz, $1::timestamptz - i * interval '1 second'
		FROM generate_series(1, 2500) AS i`, t0)
	require.NoError(t, err)

	var sizes []int
	for {
		n, err := b.store.ClaimDue(ctx, t0, 1000, startAll)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		sizes = append(sizes, n)
	}
	require.Equal(t, []int{1000, 1000, 500}, sizes)

	var models, attempts int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM models WHERE attempt_no = 1 AND refresh_at = $1),
		(SELECT count(*) FROM attempts)`, t0.Add(time.Hour)).Scan(&models, &attempts))
	require.Equal(t, 2500, models)
	// Each running attempt is its model's own: no history row until it
	// ends, and the history shows it.
	require.Zero(t, attempts)
	for _, id := range []string{"m00001", "m01000", "m01001", "m02500"} {
		h, err := b.store.History(ctx, id, time.Time{}, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Attempt{{ModelID: id, UID: id + ":1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}}, h)
	}
	next, ok, err := b.store.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Hour), next)
}

// startAll starts an attempt of every due model: refresh_at moves to the
// deadline, an hour on, with the attempt's history row.
func startAll(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
	changes := make([]refresh.Change, len(due))
	for i, m := range due {
		m.AttemptNo++
		m.AttemptUID = fmt.Sprintf("%s:%d", m.ID, m.AttemptNo)
		m.StartedAt, m.DeadlineAt, m.RefreshAt = t0, t0.Add(time.Hour), t0.Add(time.Hour)
		changes[i] = refresh.Change{Model: m, Attempt: &refresh.Attempt{
			ModelID: m.ID, UID: m.AttemptUID, AttemptNo: m.AttemptNo, StartedAt: m.StartedAt, DeadlineAt: m.DeadlineAt,
		}}
	}
	return refresh.Batch{Changes: changes}, nil
}

func TestListen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := b.store.Listen(ctx)
	require.NoError(t, err)
	select {
	case <-l.Heard: // its own notification arrived
	case <-time.After(10 * time.Second):
		t.Fatal("Listen's own notification did not arrive")
	}

	put(t, b.store, model("m", t0))
	_, ok := <-l.Wake
	require.True(t, ok, "a created due model wakes the listener")

	cancel()
	for range l.Wake {
	}
}

// notified runs op and reports whether it sent a notification for the
// store's schema: a marker sent after op arrives first if op sent none.
func notified(t *testing.T, b bundle, op func()) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var schema string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema))
	_, err = conn.Exec(ctx, "LISTEN "+postgres.NotifyChannel)
	require.NoError(t, err)

	op()
	_, err = b.pool.Exec(ctx, "SELECT pg_notify($1, $2)", postgres.NotifyChannel, schema+":marker")
	require.NoError(t, err)
	for {
		n, err := conn.WaitForNotification(ctx)
		require.NoError(t, err)
		switch n.Payload {
		case schema:
			return true
		case schema + ":marker":
			return false
		}
	}
}

func TestNotify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	s := b.store
	set := func(id string, change func(*refresh.Model)) func() {
		return func() {
			require.NoError(t, s.Modify(ctx, []string{id}, func(found []refresh.Model) (refresh.Batch, error) {
				m := found[0]
				change(&m)
				return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
			}))
		}
	}

	require.True(t, notified(t, b, func() { put(t, s, model("m", t0.Add(time.Hour))) }), "created with a refresh planned")
	require.False(t, notified(t, b, func() { put(t, s, model("idle", time.Time{})) }), "created with nothing planned")
	require.False(t, notified(t, b, set("m", func(m *refresh.Model) { m.RefreshAt = t0.Add(2 * time.Hour) })), "moved later")
	require.True(t, notified(t, b, set("m", func(m *refresh.Model) { m.RefreshAt = t0 })), "moved earlier")
	require.False(t, notified(t, b, set("m", func(m *refresh.Model) { m.Paused = true })), "paused")
	require.True(t, notified(t, b, set("m", func(m *refresh.Model) { m.Paused = false })), "resumed")
	require.True(t, notified(t, b, set("idle", func(m *refresh.Model) { m.RefreshAt = t0 })), "triggered")
}

// Updates send the policy and payload only when they changed; a change,
// and a removal of the payload, are written all the same.
func TestModifyPolicyAndPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	put(t, s, model("m", t0))
	update := func(change func(*refresh.Model)) refresh.Model {
		t.Helper()
		require.NoError(t, s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
			m := found[0]
			change(&m)
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
		}))
		got, err := s.Get(ctx, "m")
		require.NoError(t, err)
		return got
	}

	got := update(func(m *refresh.Model) { m.AttemptNo = 1 })
	require.JSONEq(t, `{"n": 1}`, string(got.Payload))
	require.Equal(t, refresh.Duration(time.Hour), got.Policy.Timeout)

	got = update(func(m *refresh.Model) {
		m.Payload = json.RawMessage(`{"n": 2}`)
		m.Policy.Timeout = refresh.Duration(time.Minute)
		m.Policy.Retry.NonRetryable = []string{"validation"}
	})
	require.JSONEq(t, `{"n": 2}`, string(got.Payload))
	require.Equal(t, refresh.Duration(time.Minute), got.Policy.Timeout)
	require.Equal(t, []string{"validation"}, got.Policy.Retry.NonRetryable)
	require.Equal(t, 1, got.AttemptNo)

	got = update(func(m *refresh.Model) { m.Payload = nil })
	require.Nil(t, got.Payload)
}

// Starts insert history rows and ends complete them; an end whose row is
// missing, in a batch with ends whose rows exist, still adds its row, and a
// start never overwrites a row already recorded.
func TestWriteAttemptStartsAndEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	put(t, s, model("a", t0), model("b", t0), model("c", t0))
	modify := func(as map[string]refresh.Attempt) {
		t.Helper()
		require.NoError(t, s.Modify(ctx, []string{"a", "b", "c"}, func(found []refresh.Model) (refresh.Batch, error) {
			var cs []refresh.Change
			for _, m := range found {
				if a, ok := as[m.ID]; ok {
					cs = append(cs, refresh.Change{Model: m, Attempt: &a})
				}
			}
			return refresh.Batch{Changes: cs}, nil
		}))
	}
	startA := refresh.Attempt{ModelID: "a", UID: "a1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}
	modify(map[string]refresh.Attempt{"a": startA})

	endA := startA
	endA.FinishedAt, endA.Outcome = t0.Add(time.Minute), refresh.OutcomeSuccess
	endB := refresh.Attempt{ModelID: "b", UID: "b1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour),
		FinishedAt: t0.Add(2 * time.Minute), Outcome: refresh.AttemptCancelled}
	startC := refresh.Attempt{ModelID: "c", UID: "c1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}
	modify(map[string]refresh.Attempt{"a": endA, "b": endB, "c": startC})
	// A start written again for a completed attempt leaves it completed.
	modify(map[string]refresh.Attempt{"a": startA})

	history := func(id string) refresh.Attempt {
		t.Helper()
		h, err := s.History(ctx, id, time.Time{}, 0)
		require.NoError(t, err)
		require.Len(t, h, 1)
		return h[0]
	}
	a := history("a")
	require.Equal(t, refresh.OutcomeSuccess, a.Outcome)
	require.True(t, a.FinishedAt.Equal(endA.FinishedAt))
	b := history("b")
	require.Equal(t, refresh.AttemptCancelled, b.Outcome)
	require.True(t, b.FinishedAt.Equal(endB.FinishedAt))
	c := history("c")
	require.Equal(t, "c1", c.UID)
	require.True(t, c.FinishedAt.IsZero())
	require.Equal(t, "", c.Outcome)
}

// TryModify does not wait for a model another transaction holds (a stalled
// instance in the middle of a pass): it passes it as busy and writes the
// others at once.
func TestTryModifyPassesLockedModelsAsBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	put(t, b.store, model("held", t0), model("free", t0))

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT 1 FROM models WHERE id = 'held' FOR UPDATE`)
	require.NoError(t, err)

	var found, busy []string
	require.NoError(t, b.store.TryModify(ctx, []string{"held", "free", "missing"}, func(ms []refresh.Model, bs []string) (refresh.Batch, error) {
		found, busy = ids(ms), bs
		m := ms[0]
		m.AttemptNo = 7
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	require.Equal(t, []string{"free"}, found)
	require.Equal(t, []string{"held"}, busy, "held exists but is locked; missing does not exist")
	m, err := b.store.Get(ctx, "free")
	require.NoError(t, err)
	require.Equal(t, 7, m.AttemptNo)
	require.NoError(t, tx.Rollback(ctx))
}

// A store bound to limits reads policies bound to them: a schedule accepted
// under a looser limit than the default is read as written, and the global
// maximum delay of the limits bounds the delays it computes.
func TestStoreSetLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	loose := refresh.DefaultLimits()
	loose.Schedule.MaxRules = 200
	loose.MaxDelay = 90 * time.Minute
	var rules strings.Builder
	rules.WriteString("DTSTART:20260101T000000Z")
	for h := range 150 {
		fmt.Fprintf(&rules, "\nRRULE:FREQ=DAILY;BYHOUR=%d;BYMINUTE=%d", h%24, h/24)
	}
	p, err := refresh.ParsePolicy([]byte(`{"schedule": `+strconv.Quote(rules.String())+
		`, "retry": {"delays": ["1h"], "jitter": 0.9}}`), loose)
	require.NoError(t, err)
	m := model("many", t0)
	m.Policy = p
	put(t, b.store, m)

	got, err := b.store.Get(context.Background(), "many")
	require.NoError(t, err)
	_, ok := got.Next(t0)
	require.False(t, ok, "read under the default limits, 150 rules are too many")

	b.store.SetLimits(loose)
	got, err = b.store.Get(context.Background(), "many")
	require.NoError(t, err)
	_, ok = got.Next(t0)
	require.True(t, ok)
	for n := range 20 {
		require.LessOrEqual(t, got.Policy.Delay(1, "many", n, t0), 90*time.Minute, "the jitter stays within the bound limits")
	}
}

// An attempt's history row is written when it ends; meanwhile the history
// shows the running attempt from its model, first, also next to a row of
// the same start time. Deleting a model deletes its history.
func TestHistoryOfRunningAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	s := b.store
	put(t, s, model("m", t0))
	run := func(uid string, no int, at time.Time) refresh.Attempt {
		a := refresh.Attempt{ModelID: "m", UID: uid, AttemptNo: no, StartedAt: at, DeadlineAt: at.Add(time.Hour)}
		require.NoError(t, s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
			m := found[0]
			m.AttemptUID, m.AttemptNo, m.StartedAt, m.DeadlineAt, m.RefreshAt = uid, no, at, at.Add(time.Hour), at.Add(time.Hour)
			return refresh.Batch{Changes: []refresh.Change{{Model: m, Attempt: &a}}}, nil
		}))
		return a
	}
	end := func(a refresh.Attempt, outcome string) refresh.Attempt {
		a.FinishedAt, a.Outcome = a.StartedAt, outcome
		require.NoError(t, s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
			m := found[0]
			m.AttemptUID, m.StartedAt, m.DeadlineAt = "", time.Time{}, time.Time{}
			return refresh.Batch{Changes: []refresh.Change{{Model: m, Attempt: &a}}}, nil
		}))
		return a
	}
	rows := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts`).Scan(&n))
		return n
	}
	history := func(limit int) []refresh.Attempt {
		h, err := s.History(ctx, "m", time.Time{}, limit)
		require.NoError(t, err)
		return h
	}

	u1 := run("u1", 1, t0)
	require.Zero(t, rows(), "a running attempt held by its model has no row")
	require.Equal(t, []refresh.Attempt{u1}, history(0))
	u1 = end(u1, refresh.AttemptSuperseded)
	require.Equal(t, 1, rows())
	// Superseded and started again at the same instant: the running one is
	// the newer.
	u2 := run("u2", 1, t0)
	require.Equal(t, []refresh.Attempt{u2, u1}, history(0))
	require.Equal(t, []refresh.Attempt{u2}, history(1))
	u2 = end(u2, refresh.OutcomeSuccess)
	require.Equal(t, []refresh.Attempt{u2, u1}, history(0))
	require.Equal(t, 2, rows())

	// A row written at the start (as earlier versions did) is not shown
	// twice, and is completed at the end.
	u3 := refresh.Attempt{ModelID: "m", UID: "u3", AttemptNo: 1, StartedAt: t0.Add(time.Hour), DeadlineAt: t0.Add(2 * time.Hour)}
	_, err := b.pool.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at) VALUES ($1, 'm', 1, $2, $3)`,
		u3.UID, u3.StartedAt, u3.DeadlineAt)
	require.NoError(t, err)
	run("u3", 1, u3.StartedAt)
	require.Equal(t, []refresh.Attempt{u3, u2, u1}, history(0))
	u3 = end(u3, refresh.OutcomeSuccess)
	require.Equal(t, []refresh.Attempt{u3, u2, u1}, history(0))
	require.Equal(t, 3, rows())

	require.NoError(t, s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Delete: true}}}, nil
	}))
	require.Zero(t, rows(), "the history goes with its model")
}

// Every outcome and failure decision the transitions record is stored
// (as an enum) and read back as written, with the failure's kind, message
// and delay; an attempt that did not fail stores no failure.
func TestHistoryOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	s := b.store
	put(t, s, model("m", t0))
	var want []refresh.Attempt
	add := func(a refresh.Attempt) {
		a.ModelID, a.UID, a.AttemptNo = "m", fmt.Sprintf("u%02d", len(want)), 1
		a.StartedAt = t0.Add(time.Duration(len(want)) * time.Minute)
		a.DeadlineAt, a.FinishedAt = a.StartedAt.Add(time.Hour), a.StartedAt.Add(time.Second)
		require.NoError(t, s.Modify(ctx, []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Attempt: &a}}}, nil
		}))
		want = append([]refresh.Attempt{a}, want...)
	}
	for _, o := range []string{refresh.EventSuccess, refresh.AttemptUnchanged, refresh.AttemptSnoozed,
		refresh.AttemptSuperseded, refresh.AttemptCancelled} {
		add(refresh.Attempt{Outcome: o})
	}
	for _, o := range []string{refresh.EventFailure, refresh.EventTimeout} {
		for _, d := range []string{refresh.DecisionRetry, refresh.DecisionRetryAligned, refresh.DecisionWaitNext, refresh.DecisionDisable} {
			a := refresh.Attempt{Outcome: o, Decision: d, ErrorKind: "exit_1", ErrorMessage: "boom"}
			if d == refresh.DecisionRetry || d == refresh.DecisionRetryAligned {
				a.Delay = 90*time.Second + time.Nanosecond
			}
			add(a)
		}
	}
	add(refresh.Attempt{Outcome: refresh.EventFailure, Decision: refresh.DecisionWaitNext})
	add(refresh.Attempt{Outcome: refresh.EventTimeout, ErrorKind: refresh.KindTimeout})

	h, err := s.History(ctx, "m", time.Time{}, 0)
	require.NoError(t, err)
	require.Equal(t, want, h)
	var failures int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE failure IS DISTINCT FROM NULL`).Scan(&failures))
	require.Equal(t, 10, failures, "the attempts that did not fail store no failure")
}

// A batch's BeforeCommitFunc runs once the batch is written, its models
// still locked; if it fails, nothing is committed.
func TestBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	put(t, s, model("a", t0))
	var busy []string
	fail := errors.New("redis down")
	claim := func(hookErr error) error {
		_, err := s.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			b, err := startAll(due, refresh.Slots{})
			b.BeforeCommitFunc = func(ctx context.Context) error {
				// Another transaction finds the model locked.
				return errors.Join(s.TryModify(ctx, []string{"a"}, func(found []refresh.Model, b []string) (refresh.Batch, error) {
					busy = b
					return refresh.Batch{}, nil
				}), hookErr)
			}
			return b, err
		})
		return err
	}
	require.ErrorIs(t, claim(fail), fail)
	require.Equal(t, []string{"a"}, busy)
	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.False(t, got.Running(), "rolled back")

	busy = nil
	require.NoError(t, claim(nil))
	require.Equal(t, []string{"a"}, busy)
	got, err = s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a:1", got.AttemptUID)
}

// With HookBeforeWrite, a batch's BeforeCommitFunc runs before the batch
// is written: a write that then fails has had its hook called, where
// without it a failed write calls no hook; either way nothing is
// committed. Once the writes succeed, the commit goes with them.
func TestHookBeforeWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	s := b.store
	put(t, s, model("a", t0))
	_, err := b.pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse BEFORE UPDATE ON models FOR EACH ROW WHEN (NEW.attempt_uid IS NOT NULL) EXECUTE FUNCTION refuse()`)
	require.NoError(t, err)
	claim := func(early bool) (called bool, err error) {
		_, err = s.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			batch, err := startAll(due, refresh.Slots{})
			batch.HookBeforeWrite = early
			batch.BeforeCommitFunc = func(context.Context) error { called = true; return nil }
			return batch, err
		})
		return called, err
	}
	for _, early := range []bool{false, true} {
		called, err := claim(early)
		require.ErrorContains(t, err, "refused")
		require.Equal(t, early, called, "hook called, HookBeforeWrite %v", early)
		got, err := s.Get(ctx, "a")
		require.NoError(t, err)
		require.False(t, got.Running(), "rolled back")
	}
	_, err = b.pool.Exec(ctx, `DROP TRIGGER refuse ON models`)
	require.NoError(t, err)
	called, err := claim(true)
	require.NoError(t, err)
	require.True(t, called)
	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a:1", got.AttemptUID)
}

// An update writes the columns its batch changes, each to the new value,
// whatever else the batch's other models change, and keeps the others.
func TestUpdateChangedColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t).store
	t1 := t0.Add(90 * time.Minute)
	yes := true
	edits := map[string]func(*refresh.Model){
		"queue":    func(m *refresh.Model) { m.Queue = "thumbs" },
		"payload":  func(m *refresh.Model) { m.Payload = json.RawMessage(`{"n": 2}`) },
		"nopayld":  func(m *refresh.Model) { m.Payload = nil },
		"policy":   func(m *refresh.Model) { m.Policy.Timeout = refresh.Duration(time.Minute); m.Policy.Retry.Align = &yes },
		"created":  func(m *refresh.Model) { m.CreatedAt = t1 },
		"refresh":  func(m *refresh.Model) { m.RefreshAt = time.Time{} },
		"deadline": func(m *refresh.Model) { m.DeadlineAt = t1 },
		"no":       func(m *refresh.Model) { m.AttemptNo = 7 },
		"uid":      func(m *refresh.Model) { m.AttemptUID = "u9" },
		"started":  func(m *refresh.Model) { m.StartedAt = t1 },
		"failures": func(m *refresh.Model) { m.ConsecutiveFailures = 3 },
		"failing":  func(m *refresh.Model) { m.FailingSince = t1 },
		"success":  func(m *refresh.Model) { m.LastSuccessAt = t1 },
		"error":    func(m *refresh.Model) { m.LastError = &refresh.LastError{Kind: "http_503", Message: "503", At: t1} },
		"noerror":  func(m *refresh.Model) { m.LastError = nil },
		"emptyerr": func(m *refresh.Model) { m.LastError = &refresh.LastError{At: t1} },
		"disabled": func(m *refresh.Model) { m.DisabledAt, m.DisabledReason = t1, "Gave up." },
		"paused":   func(m *refresh.Model) { m.Paused = true },
		"status":   func(m *refresh.Model) { m.StatusMessage = "42%" },
		"nothing":  func(m *refresh.Model) {},
	}
	var all []string
	var ms []refresh.Model
	for id := range edits {
		m := model(id, t0)
		m.LastError = &refresh.LastError{Kind: "old", Message: "before", At: t0}
		all, ms = append(all, id), append(ms, m)
	}
	put(t, s, ms...)
	want := map[string]refresh.Model{}
	require.NoError(t, s.Modify(ctx, all, func(found []refresh.Model) (refresh.Batch, error) {
		var b refresh.Batch
		for _, m := range found {
			edits[m.ID](&m)
			want[m.ID] = m
			b.Changes = append(b.Changes, refresh.Change{Model: m})
		}
		return b, nil
	}))
	for _, id := range all {
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want[id], got, id)
	}
	// Models of one kind of change only: the statement sets those columns.
	require.NoError(t, s.Modify(ctx, []string{"no"}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.AttemptNo = 8
		want["no"] = m
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	got, err := s.Get(ctx, "no")
	require.NoError(t, err)
	require.Equal(t, want["no"], got)
}
