package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/webhook"
)

// TestE2EFreshnessAlertsOncePerEpisode runs freshen serve with a webhook
// endpoint that pages on freshness_lost and freshness_restored, and a model
// with max_age whose worker is absent. The model is paused before its
// overdue instant; the scheduler wakes for it all the same and publishes one
// freshness_lost (state paused). Then, while the episode lasts: a resume,
// an edit by PATCH and one by PUT, a start, a clean stop of serve and two
// new instances on the same database and Redis, a start on one of them
// that supersedes the first attempt, a SIGKILL of that instance, a pause
// and a resume on the survivor. None of them repeats freshness_lost: the
// episode keeps its overdue_since and plans no new wake. A worker then
// succeeds: one freshness_restored, with the episode's overdue_since and
// its length. The receiver answers 500 to the first send of each key, so
// every delivery is sent again: the retry carries the same key and is not
// a new episode. A second episode later gets keys of its own.
func TestE2EFreshnessAlertsOncePerEpisode(t *testing.T) {
	t.Parallel()
	const (
		id     = "fr-1"
		maxAge = 3 * time.Second
	)
	e := newEnv(t)
	rcv := &webhookReceiver{sent: map[string]int{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	hooks, err := json.Marshal([]webhook.Endpoint{{Name: "pager", URL: srv.URL + "/hooks", Secret: webhookSecret,
		Events: []string{refresh.EventFreshnessLost, refresh.EventFreshnessRestored, refresh.LifecycleDisabled}, Prefix: "fr-"}})
	require.NoError(t, err)
	// The scheduler sleeps up to a minute when nothing is due: it must
	// wake at the overdue instant because it is planned, not because it
	// polls.
	flags := []string{"--max-sleep", "1m", "--webhooks", string(hooks), "--webhook-allow-private",
		"--webhook-backoff", "100ms", "--webhook-max-backoff", "200ms", "--webhook-timeout", "2s"}
	a := e.serve("a", flags...)

	definition := func(v int) string {
		return fmt.Sprintf(`{"queue": "fr", "payload": {"v": %d}, "policy": {"max_age": "%s", "timeout": "10m"}}`, v, maxAge)
	}
	code, res := request(t, "PUT", a.base+"/models/"+id, definition(1))
	require.Equal(t, http.StatusCreated, code, res)
	res = action(t, a, id, "pause")
	require.Nil(t, res["model"].(map[string]any)["overdue_since"],
		"the pause must come before the overdue instant, %s after the creation", maxAge)

	// The first episode opens at created_at + max_age, exactly.
	created := e.freshness(id).createdAt
	since := created.Add(maxAge)
	lostKey, restoredKey := freshnessKey(id, refresh.EventFreshnessLost, since), freshnessKey(id, refresh.EventFreshnessRestored, since)
	waitFor(t, 30*time.Second, "the freshness_lost webhook", func() bool { return len(rcv.delivered(t, lostKey)) > 0 })
	lost := rcv.delivered(t, lostKey)[0]
	require.Equal(t, refresh.EventFreshnessLost, lost.Type)
	require.Equal(t, refresh.PhasePaused, lost.State, "the model was paused when it became overdue")
	require.True(t, since.Equal(lost.OverdueSince), "overdue_since %s, want created_at + max_age = %s", lost.OverdueSince, since)
	requireWokeAt(t, since, lost.At)
	e.requireOpenEpisode(id, since, "freshness_lost")

	// Resume and edit, on a: the episode stays open, no wake is planned.
	action(t, a, id, "resume")
	e.requireOpenEpisode(id, since, "resume")
	code, res = request(t, "PATCH", a.base+"/models/"+id, `{"payload": {"v": 2}}`)
	require.Equal(t, http.StatusOK, code, res)
	e.requireOpenEpisode(id, since, "an edit by PATCH")
	code, res = request(t, "PUT", a.base+"/models/"+id, definition(3))
	require.Equal(t, http.StatusOK, code, res)
	e.requireOpenEpisode(id, since, "an edit by PUT")
	// A trigger makes the scheduler tick the model: a freshness_lost it
	// would repeat is published in that tick, before the start.
	action(t, a, id, "trigger")
	oneLost := [][2]string{{refresh.EventFreshnessLost, ts3339(since)}}
	first := e.waitStarted(id, 1, oneLost)
	e.requireOpenEpisode(id, since, "a start on a")

	// A clean stop, and two new instances on the same database and Redis.
	a.stop()
	b := e.serve("b", flags...)
	c := e.serve("c", flags...)
	e.requireOpenEpisode(id, since, "the restart")
	action(t, b, id, "trigger")
	second := e.waitStarted(id, 2, oneLost)
	require.NotEqual(t, first, second)
	e.requireOpenEpisode(id, since, "a start that supersedes, on b")
	// Failover: b dies, c goes on alone.
	b.kill()
	action(t, c, id, "pause")
	e.requireOpenEpisode(id, since, "a pause on c")
	action(t, c, id, "resume")
	e.requireOpenEpisode(id, since, "a resume on c")
	e.requireFreshnessEvents(id, oneLost)

	// The worker succeeds: the episode ends with one freshness_restored.
	workerAt := time.Now()
	e.startWorker("fr", 1)
	waitFor(t, 30*time.Second, "the freshness_restored webhook", func() bool { return len(rcv.delivered(t, restoredKey)) > 0 })
	seenAt := time.Now()
	restored := rcv.delivered(t, restoredKey)[0]
	require.True(t, since.Equal(restored.OverdueSince), "freshness_restored overdue_since %s, want %s", restored.OverdueSince, since)
	succeeded := e.lastStreamEvent(id, refresh.LifecycleSucceeded)
	require.Equal(t, second, succeeded.AttemptUID, "the success of the attempt that b started")
	require.True(t, succeeded.At.Equal(restored.At), "freshness_restored at %s, its success at %s", restored.At, succeeded.At)
	require.Equal(t, restored.At.Sub(since), restored.OverdueFor, "overdue_for is the episode's length, overdue_since to the success")
	require.True(t, restored.OverdueFor >= workerAt.Sub(since) && restored.OverdueFor <= seenAt.Sub(since),
		"overdue_for %s: the success came after the worker started (%s after overdue_since) and before its webhook (%s)",
		restored.OverdueFor, workerAt.Sub(since), seenAt.Sub(since))
	t.Logf("first episode: overdue since %s for %s", ts3339(since), restored.OverdueFor)
	st := e.freshness(id)
	require.True(t, st.overdueSince.IsZero(), "overdue_since after the success: %s", st.overdueSince)
	require.True(t, st.lastSuccessAt.Equal(restored.At.Truncate(time.Microsecond)), "last_success_at %s, success at %s", st.lastSuccessAt, restored.At)
	require.True(t, st.overdueAt.Equal(st.lastSuccessAt.Add(maxAge)), "overdue_at %s, want last_success_at + max_age", st.overdueAt)

	// The second episode opens at last_success_at + max_age, with keys of
	// its own, and ends at the next success.
	since2 := st.lastSuccessAt.Add(maxAge)
	lost2Key, restored2Key := freshnessKey(id, refresh.EventFreshnessLost, since2), freshnessKey(id, refresh.EventFreshnessRestored, since2)
	require.NotEqual(t, lostKey, lost2Key)
	waitFor(t, 30*time.Second, "the second freshness_lost webhook", func() bool { return len(rcv.delivered(t, lost2Key)) > 0 })
	lost2 := rcv.delivered(t, lost2Key)[0]
	require.Equal(t, refresh.PhaseIdle, lost2.State, "an on-demand model with nothing planned")
	require.True(t, since2.Equal(lost2.OverdueSince), "overdue_since %s, want last_success_at + max_age = %s", lost2.OverdueSince, since2)
	requireWokeAt(t, since2, lost2.At)
	action(t, c, id, "trigger")
	waitFor(t, 30*time.Second, "the second freshness_restored webhook", func() bool { return len(rcv.delivered(t, restored2Key)) > 0 })
	restored2 := rcv.delivered(t, restored2Key)[0]
	require.True(t, since2.Equal(restored2.OverdueSince), "freshness_restored overdue_since %s, want %s", restored2.OverdueSince, since2)
	require.Equal(t, restored2.At.Sub(since2), restored2.OverdueFor)

	// The events stream holds one freshness_lost and one
	// freshness_restored per episode, and nothing else of the kind (an
	// entry published again is the same event: streamEventsOf). The
	// deliveries below count the events exactly: one row per event taken
	// out of the outbox.
	e.requireFreshnessEvents(id, [][2]string{
		{refresh.EventFreshnessLost, ts3339(since)}, {refresh.EventFreshnessRestored, ts3339(since)},
		{refresh.EventFreshnessLost, ts3339(since2)}, {refresh.EventFreshnessRestored, ts3339(since2)},
	})
	// The receiver saw these four keys and no other, each sent again after
	// its 500; the deliveries table holds one delivery per key.
	keys := []string{lostKey, restoredKey, lost2Key, restored2Key}
	sent := rcv.sentCounts()
	require.ElementsMatch(t, keys, slices.Collect(maps.Keys(sent)), "the keys the endpoint got")
	for _, key := range keys {
		require.GreaterOrEqual(t, sent[key], 2, "sends of %s: a 500, then a retry", key)
		require.Equal(t, 1, e.count(`SELECT count(*) FROM webhook_deliveries WHERE idempotency_key = $1`, key), "deliveries of %s", key)
	}
	waitFor(t, 30*time.Second, "the four deliveries marked delivered", func() bool {
		return e.count(`SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'`) == len(keys)
	})
	require.Equal(t, len(keys), e.count(`SELECT count(*) FROM webhook_deliveries`))
}

// TestE2EFreshnessLostWhileDown stops freshen serve before a paused
// model's overdue instant and starts two instances together after it: one
// freshness_lost, of the episode that opened while no serve ran (its
// overdue_since is the instant, not the restart), published by one of
// them; then a resume and a start, and a success that restores it once.
func TestE2EFreshnessLostWhileDown(t *testing.T) {
	t.Parallel()
	const (
		id     = "fr-down"
		maxAge = 2 * time.Second
	)
	e := newEnv(t)
	rcv := &webhookReceiver{sent: map[string]int{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	hooks, err := json.Marshal([]webhook.Endpoint{{Name: "pager", URL: srv.URL + "/hooks", Secret: webhookSecret,
		Events: []string{refresh.EventFreshnessLost, refresh.EventFreshnessRestored}}})
	require.NoError(t, err)
	flags := []string{"--max-sleep", "1m", "--webhooks", string(hooks), "--webhook-allow-private", "--webhook-backoff", "100ms", "--webhook-max-backoff", "200ms"}
	a := e.serve("a", flags...)
	code, res := request(t, "PUT", a.base+"/models/"+id, fmt.Sprintf(`{"queue": "fr", "policy": {"max_age": "%s"}}`, maxAge))
	require.Equal(t, http.StatusCreated, code, res)
	action(t, a, id, "pause")
	a.stop()
	since := e.freshness(id).createdAt.Add(maxAge)
	require.True(t, time.Now().Before(since), "serve must stop before the overdue instant, %s after the creation", maxAge)
	require.True(t, e.freshness(id).overdueSince.IsZero())

	// No serve runs when the model becomes overdue.
	<-time.After(time.Until(since))
	b, c := e.start("b", flags...), e.start("c", flags...)
	lostKey := freshnessKey(id, refresh.EventFreshnessLost, since)
	waitFor(t, 30*time.Second, "the freshness_lost webhook", func() bool { return len(rcv.delivered(t, lostKey)) > 0 })
	lost := rcv.delivered(t, lostKey)[0]
	require.Equal(t, refresh.PhasePaused, lost.State)
	require.True(t, since.Equal(lost.OverdueSince), "overdue_since %s, want %s", lost.OverdueSince, since)
	e.requireOpenEpisode(id, since, "the start of two instances")
	waitFor(t, 30*time.Second, "b and c to be ready", func() bool { return b.ready() && c.ready() })

	action(t, c, id, "resume")
	e.requireOpenEpisode(id, since, "resume")
	action(t, b, id, "trigger")
	oneLost := [][2]string{{refresh.EventFreshnessLost, ts3339(since)}}
	uid := e.waitStarted(id, 1, oneLost)
	e.startWorker("fr", 1)
	restoredKey := freshnessKey(id, refresh.EventFreshnessRestored, since)
	waitFor(t, 30*time.Second, "the freshness_restored webhook", func() bool { return len(rcv.delivered(t, restoredKey)) > 0 })
	restored := rcv.delivered(t, restoredKey)[0]
	require.Equal(t, uid, e.lastStreamEvent(id, refresh.LifecycleSucceeded).AttemptUID)
	require.Equal(t, restored.At.Sub(since), restored.OverdueFor)
	e.requireFreshnessEvents(id, append(oneLost, [2]string{refresh.EventFreshnessRestored, ts3339(since)}))
	require.ElementsMatch(t, []string{lostKey, restoredKey}, slices.Collect(maps.Keys(rcv.sentCounts())))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM webhook_deliveries`), "one delivery per event")
}

// requireWokeAt fails the test unless a freshness_lost published at at
// came at its overdue instant since: not before it, and within a second
// after (the scheduler wakes for it rather than finding it later).
func requireWokeAt(t *testing.T, since, at time.Time) {
	t.Helper()
	require.False(t, at.Before(since), "freshness_lost at %s, before the overdue instant %s", at, since)
	require.Less(t, at.Sub(since), time.Second, "freshness_lost at %s, %s after the overdue instant", at, at.Sub(since))
	t.Logf("freshness_lost %s after its overdue instant", at.Sub(since))
}

// freshnessState is what the models table says of a model's freshness.
type freshnessState struct {
	createdAt, lastSuccessAt, overdueSince, overdueAt time.Time
}

// freshness reads the freshness columns of model id.
func (e *env) freshness(id string) freshnessState {
	e.t.Helper()
	var created, success, since, at pgtype.Timestamptz
	require.NoError(e.t, e.db.QueryRow(context.Background(),
		`SELECT created_at, last_success_at, overdue_since, overdue_at FROM models WHERE id = $1`, id).
		Scan(&created, &success, &since, &at))
	return freshnessState{createdAt: created.Time, lastSuccessAt: success.Time, overdueSince: since.Time, overdueAt: at.Time}
}

// requireOpenEpisode fails the test unless model id's freshness episode
// is still the one that opened at since, with no overdue wake planned
// (overdue_at is NULL while an episode is open), after what.
func (e *env) requireOpenEpisode(id string, since time.Time, after string) {
	e.t.Helper()
	st := e.freshness(id)
	require.True(e.t, since.Equal(st.overdueSince), "after %s: overdue_since %s, want %s", after, st.overdueSince, since)
	require.True(e.t, st.overdueAt.IsZero(), "after %s: overdue_at %s, want none while the episode is open", after, st.overdueAt)
}

// waitStarted waits until the events stream holds n started events of
// model id and returns the attempt uid of the last. Meanwhile the
// freshness events of the model must stay freshness (see
// requireFreshnessEvents): a repeat fails the test at once.
func (e *env) waitStarted(id string, n int, freshness [][2]string) string {
	e.t.Helper()
	var uid string
	waitFor(e.t, 30*time.Second, fmt.Sprintf("start %d of %s", n, id), func() bool {
		e.requireFreshnessEvents(id, freshness)
		got := e.streamEventsOf(id, refresh.LifecycleStarted)
		if len(got) < n {
			return false
		}
		require.Len(e.t, got, n, "started events of %s: %v", id, attempts(got))
		uid = got[n-1].AttemptUID
		return true
	})
	return uid
}

// attempts returns "attempt_uid at" of each event, for messages.
func attempts(events []refresh.Event) []string {
	out := make([]string, 0, len(events))
	for _, ev := range events {
		out = append(out, ev.AttemptUID+" "+ts3339(ev.At))
	}
	return out
}

// lastStreamEvent waits until the events stream holds an entry named name
// of model id and returns the last.
func (e *env) lastStreamEvent(id, name string) refresh.Event {
	e.t.Helper()
	var got []refresh.Event
	waitFor(e.t, 30*time.Second, name+" of "+id, func() bool {
		got = e.streamEventsOf(id, name)
		return len(got) > 0
	})
	return got[len(got)-1]
}

// streamEventsOf returns the events of model id that the events stream
// holds under one of names, in order, each once: the stream is written at
// least once (docs/transitions.md), so an entry that repeats an earlier
// one byte for byte is the same event published again, not a new one (a
// transition that repeats has a time of its own). Such repeats are
// logged.
func (e *env) streamEventsOf(id string, names ...string) []refresh.Event {
	e.t.Helper()
	var out []refresh.Event
	seen := map[[2]string]bool{}
	for _, x := range streamEvents(e.t, e.rdb, e.key("events")) {
		if x[1] != id || !slices.Contains(names, x[0]) {
			continue
		}
		if seen[[2]string{x[0], x[2]}] {
			e.t.Logf("the events stream holds %s of %s again: %s", x[0], id, x[2])
			continue
		}
		seen[[2]string{x[0], x[2]}] = true
		var ev refresh.Event
		require.NoError(e.t, json.Unmarshal([]byte(x[2]), &ev))
		out = append(out, ev)
	}
	return out
}

// requireFreshnessEvents fails the test unless the freshness events of
// model id in the events stream are want, (name, overdue_since) each, in
// order.
func (e *env) requireFreshnessEvents(id string, want [][2]string) {
	e.t.Helper()
	var got [][2]string
	for _, ev := range e.streamEventsOf(id, refresh.EventFreshnessLost, refresh.EventFreshnessRestored) {
		got = append(got, [2]string{ev.Type, ts3339(ev.OverdueSince)})
	}
	require.Equal(e.t, want, got, "freshness events of %s in the events stream", id)
}

// action posts the action name (pause, resume, trigger...) of model id to
// p, requires that it changed the model, and returns the answer.
func action(t *testing.T, p *proc, id, name string) map[string]any {
	t.Helper()
	code, res := request(t, "POST", p.base+"/models/"+id+"/"+name, "")
	require.Equal(t, http.StatusOK, code, res)
	require.Equal(t, true, res["changed"], "%s of %s changed nothing: %v", name, id, res)
	return res
}

// freshnessKey is the idempotency key of docs/webhooks.md for a freshness
// event, built here from the documentation rather than by
// refresh.Event.FreshnessKey.
func freshnessKey(id, event string, since time.Time) string {
	return id + ":" + event + ":" + ts3339(since)
}

// ts3339 formats t in RFC 3339 UTC, to the nanosecond if it has any.
func ts3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// delivered returns the events of the deliveries with key that the
// receiver answered with 200, in order; each must name its event as the
// event does.
func (r *webhookReceiver) delivered(t *testing.T, key string) []refresh.Event {
	t.Helper()
	var out []refresh.Event
	for _, p := range r.payloads() {
		if p.IdempotencyKey != key {
			continue
		}
		var ev refresh.Event
		require.NoError(t, json.Unmarshal(p.Event, &ev), "delivery %s", key)
		require.Equal(t, ev.Type, p.Type, "delivery %s", key)
		out = append(out, ev)
	}
	return out
}

// sentCounts returns how many times each key was sent.
func (r *webhookReceiver) sentCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.sent)
}
