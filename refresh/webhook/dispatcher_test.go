package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// disabledEvent is the failure event that disables model id, ending
// attempt uid.
func disabledEvent(id, uid string, at time.Time) refresh.Event {
	return refresh.Event{At: at, ModelID: id, Type: refresh.EventFailure, Decision: refresh.DecisionDisable, Kind: "validation",
		Message: "row 3: no date", Reason: "Row 3 of your file has no date.", AttemptNo: 2, AttemptUID: uid, Disabled: true}
}

func TestWebhookDeliversChosenEventsThroughFailures(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	overdue := t0.Add(-time.Hour)
	answers := map[string][]int{ // by key: the statuses of the first sends (0: no answer), then 200
		"acme-1:disabled:u1":                             {500, 502},
		"acme-1:enabled:2026-03-02T05:59:00Z":            {0},
		"acme-2:freshness_lost:2026-03-02T05:00:00Z":     {503},
		"acme-2:freshness_restored:2026-03-02T05:00:00Z": {404, 0, 500},
	}
	rcv := newReceiver(t, func(key string, n int) int {
		if a := answers[key]; n <= len(a) {
			return a[n-1]
		}
		return 200
	})
	crm := rcv.endpoint("crm", refresh.LifecycleDisabled, refresh.LifecycleEnabled, refresh.EventFreshnessLost, refresh.EventFreshnessRestored)
	crm.Prefix = "acme-"
	ops := rcv.endpoint("ops", refresh.LifecycleFailed)
	p := b.publisher(t, nil, crm, ops)

	b.write(t,
		disabledEvent("acme-1", "u1", t0.Add(-2*time.Minute)),
		refresh.Event{At: t0.Add(-2 * time.Minute), ModelID: "acme-1", Type: refresh.EventStart, AttemptNo: 3, AttemptUID: "u2"}, // chosen by none
		refresh.Event{At: t0.Add(-time.Minute), ModelID: "acme-1", Type: refresh.EventEnable},
		refresh.Event{At: overdue, ModelID: "acme-2", Type: refresh.EventFreshnessLost, OverdueSince: overdue, State: "running"},
		refresh.Event{At: t0, ModelID: "acme-2", Type: refresh.EventSuccess, AttemptUID: "u4"}, // chosen by none
		refresh.Event{At: t0, ModelID: "acme-2", Type: refresh.EventFreshnessRestored, OverdueSince: overdue, OverdueFor: time.Hour},
		disabledEvent("other-1", "u3", t0), // not under crm's prefix
	)
	res, err := p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.PublishResult{Published: 7, Routed: 6}, res)
	want := map[string]string{
		"acme-1:disabled:u1@crm": "pending/0", "acme-1:failed:u1@ops": "pending/0",
		"acme-1:enabled:2026-03-02T05:59:00Z@crm":            "pending/0",
		"acme-2:freshness_lost:2026-03-02T05:00:00Z@crm":     "pending/0",
		"acme-2:freshness_restored:2026-03-02T05:00:00Z@crm": "pending/0",
		"other-1:failed:u3@ops":                              "pending/0",
	}
	require.Equal(t, want, b.rows(t))

	backoff := Backoff{Base: 10 * time.Second, Max: 40 * time.Second, Jitter: 0.2}
	d, sent := b.dispatcher(t, nil, Config{Endpoints: []Endpoint{crm, ops}, Timeout: 300 * time.Millisecond, Backoff: backoff})
	retries := map[string][]time.Duration{}
	for round := 0; round < 8; round++ {
		r, err := d.runOnce(ctx)
		require.NoError(t, err)
		now := b.clock.Now()
		for _, s := range wait(t, sent, r.Claimed) {
			require.True(t, s.Recorded, "the result of %s is recorded", s.Delivery.Key)
			if s.Result.State == refresh.DeliveryPending {
				retries[s.Delivery.Key] = append(retries[s.Delivery.Key], s.Result.At.Sub(now))
			}
		}
		b.clock.Advance(backoff.Max * 2)
	}
	for k := range want {
		want[k] = "delivered/" + strconv.Itoa(len(answers[k[:len(k)-4]])+1)
	}
	require.Equal(t, want, b.rows(t), "every chosen event is delivered, after as many sends as it took")

	// The failed sends back off: retry n waits base·2^(n-1) capped at
	// max, give or take the jitter.
	for key, a := range answers {
		require.Len(t, retries[key], len(a), key)
		for i, delay := range retries[key] {
			nominal := min(backoff.Base<<i, backoff.Max)
			require.InDelta(t, float64(nominal), float64(delay), float64(nominal)*backoff.Jitter, "%s retry %d", key, i+1)
		}
	}

	secrets := map[string]string{"crm": crm.Secret, "ops": ops.Secret}
	got := rcv.requests()
	sends := map[string]int{}
	for _, r := range got {
		sends[r.key]++
		require.Equal(t, strconv.Itoa(sends[r.key]), r.attempt, "Freshen-Attempt counts the sends of %s", r.key)
		require.NoError(t, Verify(secrets[r.endpoint], r.signature, r.body, b.clock.Now(), 0), "the signature of %s verifies", r.key)
		require.ErrorIs(t, Verify(secrets[r.endpoint], r.signature, append(r.body, ' '), b.clock.Now(), 0), ErrBadSignature)
		p := decode(t, r.body)
		require.Equal(t, r.endpoint, p.Endpoint)
		require.Equal(t, r.event, p.Type)
		require.Equal(t, r.key, p.IdempotencyKey)
		require.Contains(t, want, r.key+"@"+r.endpoint, "only chosen events are sent")
		var e refresh.Event
		require.NoError(t, json.Unmarshal(p.Event, &e))
		require.Equal(t, p.ModelID, e.ModelID)
	}
	first := decode(t, got[slices.IndexFunc(got, func(r request) bool { return r.key == "acme-1:disabled:u1" })].body)
	var e refresh.Event
	require.NoError(t, json.Unmarshal(first.Event, &e))
	require.Equal(t, "Row 3 of your file has no date.", e.Reason, "the disabled event carries the customer-facing reason")

	require.Equal(t, 6.0, value(t, d.cfg.Metrics.Delivered.WithLabelValues("crm"))+value(t, d.cfg.Metrics.Delivered.WithLabelValues("ops")))
	require.Equal(t, 7.0, value(t, d.cfg.Metrics.Retried.WithLabelValues("crm")))
	require.Equal(t, 0.0, value(t, d.cfg.Metrics.Pending.WithLabelValues("crm")))
}

func TestWebhookRestartBetweenTakeAndDeliveryLosesNothing(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	arrived := make(chan struct{}, 10)
	rcv := newReceiver(t, func(key string, n int) int {
		arrived <- struct{}{}
		if n == 1 {
			return 0 // the first send never gets an answer: the process dies meanwhile
		}
		return 200
	})
	crm := rcv.endpoint("crm", refresh.LifecycleDisabled)
	q := &flakyQueue{Queue: b.queue, down: true}
	p := b.publisher(t, q, crm)
	b.write(t, disabledEvent("m1", "u1", t0))

	_, err := p.RunOnce(ctx)
	require.ErrorContains(t, err, "redis down")
	require.Empty(t, b.rows(t), "a pass that fails writes no delivery; the event stays in the outbox")
	q.down = false
	res, err := p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Routed)
	res, err = p.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Routed, "an event is routed once")

	// A process that never started delivering: a new one finds the
	// delivery; it dies in the middle of the send.
	_, store := b.open(t)
	d1, sent1 := b.dispatcher(t, store, Config{Endpoints: []Endpoint{crm}, Timeout: time.Minute})
	ctx1, die := context.WithCancel(ctx)
	r, err := d1.runOnce(ctx1)
	require.NoError(t, err)
	require.Equal(t, 1, r.Claimed)
	<-arrived
	die()
	d1.sends.Wait()
	require.Empty(t, sent1, "nothing is recorded by a dying process")
	require.Equal(t, map[string]string{"m1:disabled:u1@crm": "pending/1"}, b.rows(t))

	// The next process sends it again once its lease runs out.
	_, store = b.open(t)
	d2, sent2 := b.dispatcher(t, store, Config{Endpoints: []Endpoint{crm}, Timeout: time.Minute})
	r, err = d2.runOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, r.Claimed, "the delivery is leased to the dead process for a while")
	b.clock.Advance(d2.lease())
	r, err = d2.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Claimed)
	s := wait(t, sent2, 1)[0]
	require.Equal(t, refresh.DeliveryDelivered, s.Result.State)
	require.Equal(t, map[string]string{"m1:disabled:u1@crm": "delivered/2"}, b.rows(t))
	keys := []string{}
	for _, r := range rcv.requests() {
		keys = append(keys, r.key)
	}
	require.Equal(t, []string{"m1:disabled:u1", "m1:disabled:u1"}, keys, "the same key on both sends")
}

func TestWebhookDispatchersNeverSendADeliveryTwiceAtOnce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rcv := newReceiver(t, func(string, int) int { return 204 })
	ops := rcv.endpoint("ops", refresh.LifecycleStarted)
	const n = 60
	events := make([]refresh.Event, n)
	for i := range events {
		events[i] = refresh.Event{At: t0, ModelID: fmt.Sprintf("m%02d", i), Type: refresh.EventStart, AttemptNo: 1, AttemptUID: fmt.Sprintf("u%02d", i)}
	}
	b.write(t, events...)
	_, err := b.publisher(t, nil, ops).RunOnce(ctx)
	require.NoError(t, err)

	type instance struct {
		d    *Dispatcher
		sent chan Sent
	}
	var instances []instance
	for range 3 {
		_, store := b.open(t)
		d, sent := b.dispatcher(t, store, Config{Endpoints: []Endpoint{ops}, MaxInFlight: 7})
		instances = append(instances, instance{d, sent})
	}
	var delivered atomic.Int64
	for pass := 0; delivered.Load() < n; pass++ {
		require.Less(t, pass, n, "every delivery is sent within %d passes", n)
		var wg sync.WaitGroup
		for _, in := range instances {
			wg.Go(func() {
				r, err := in.d.runOnce(ctx)
				require.NoError(t, err)
				for _, s := range wait(t, in.sent, r.Claimed) {
					require.True(t, s.Recorded)
					delivered.Add(1)
				}
			})
		}
		wg.Wait()
	}
	counts := map[string]int{}
	for _, r := range rcv.requests() {
		counts[r.key]++
	}
	require.Len(t, counts, n)
	for k, c := range counts {
		require.Equal(t, 1, c, "%s is sent once", k)
	}
}

func TestWebhookGivesUpAndPrunes(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rcv := newReceiver(t, func(key string, _ int) int {
		if key == "ok:disabled:u1" {
			return 200
		}
		return 500
	})
	crm := rcv.endpoint("crm", refresh.LifecycleDisabled)
	b.write(t,
		disabledEvent("ok", "u1", t0),
		disabledEvent("down", "u2", t0),
		disabledEvent("old", "u3", t0.Add(-24*time.Hour+5*time.Second)), // its first retry would be past MaxAge
	)
	_, err := b.publisher(t, nil, crm).RunOnce(ctx)
	require.NoError(t, err)

	d, sent := b.dispatcher(t, nil, Config{Endpoints: []Endpoint{crm}, MaxAttempts: 3, MaxAge: 24 * time.Hour,
		Backoff: Backoff{Base: 10 * time.Second, Max: time.Minute}, Retention: time.Hour, FailedRetention: 48 * time.Hour})
	pruned := 0
	for range 4 {
		r, err := d.runOnce(ctx)
		require.NoError(t, err)
		pruned += r.Pruned
		wait(t, sent, r.Claimed)
		b.clock.Advance(time.Minute)
	}
	require.Zero(t, pruned)
	require.Equal(t, map[string]string{
		"ok:disabled:u1@crm": "delivered/1", "down:disabled:u2@crm": "failed/3", "old:disabled:u3@crm": "failed/1",
	}, b.rows(t), "given up after MaxAttempts sends, or at once past MaxAge, and kept")
	m := d.cfg.Metrics
	require.Equal(t, []float64{1, 2, 2, 0}, []float64{value(t, m.Delivered), value(t, m.Retried),
		value(t, m.Failed), value(t, m.Pending)})

	b.clock.Advance(time.Hour)
	r, err := d.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Pruned)
	require.Equal(t, []string{"down:disabled:u2@crm", "old:disabled:u3@crm"}, slices.Sorted(maps.Keys(b.rows(t))),
		"delivered rows go after Retention; failed ones stay for inspection")
	b.clock.Advance(48 * time.Hour)
	r, err = d.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, r.Pruned)
	require.Empty(t, b.rows(t), "failed rows go after FailedRetention")
}

func TestWebhookSlowEndpointDoesNotStallOthers(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	release := make(chan struct{})
	var inFlight, most atomic.Int64
	arrived := make(chan struct{}, 10)
	slowRcv := newReceiver(t, func(string, int) int {
		cur := inFlight.Add(1)
		for m := most.Load(); cur > m && !most.CompareAndSwap(m, cur); m = most.Load() {
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		return 200
	})
	// Cleanups run last first: the hanging sends are released before the
	// receiver closes, so a failure below shows instead of a hang.
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	fastRcv := newReceiver(t, func(string, int) int { return 200 })
	slow, fast := slowRcv.endpoint("slow", refresh.LifecycleStarted), fastRcv.endpoint("fast", refresh.LifecycleStarted)
	slow.Prefix, fast.Prefix = "s", "f"
	var events []refresh.Event
	for i := range 4 {
		events = append(events, refresh.Event{At: t0, ModelID: fmt.Sprintf("s%d", i), Type: refresh.EventStart, AttemptUID: fmt.Sprintf("us%d", i)})
	}
	for i := range 6 {
		events = append(events, refresh.Event{At: t0, ModelID: fmt.Sprintf("f%d", i), Type: refresh.EventStart, AttemptUID: fmt.Sprintf("uf%d", i)})
	}
	b.write(t, events...)
	_, err := b.publisher(t, nil, slow, fast).RunOnce(ctx)
	require.NoError(t, err)

	d, sent := b.dispatcher(t, nil, Config{Endpoints: []Endpoint{slow, fast}, MaxInFlight: 2, Timeout: time.Minute})
	fastDone := 0
	for pass := 0; fastDone < 6; pass++ {
		require.Less(t, pass, 6)
		r, err := d.runOnce(ctx)
		require.NoError(t, err)
		if pass == 0 {
			require.Equal(t, 4, r.Claimed, "two of each endpoint")
		}
		for _, s := range wait(t, sent, min(2, 6-fastDone)) {
			require.Equal(t, "fast", s.Delivery.Endpoint, "only the fast endpoint answers")
			fastDone++
		}
	}
	require.Equal(t, 0, len(fastRcv.requests())-6)
	// Both of the slow endpoint's sends reach it (each may arrive after the
	// fast ones are done), and no third one while they hang.
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("a send to the slow endpoint never arrived")
		}
	}
	require.Equal(t, int64(2), most.Load(), "the slow endpoint has at most MaxInFlight sends at once")
	unblock()
	wait(t, sent, 2)
	r, err := d.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, r.Claimed)
	wait(t, sent, 2)
	for k, v := range b.rows(t) {
		require.Equal(t, "delivered/1", v, k)
	}
}

func TestWebhookRouteNeedsADeliveryStore(t *testing.T) {
	clock := refresh.NewVirtualClock(t0)
	r, err := NewRouter(nil)
	require.NoError(t, err)
	_, err = refresh.NewPublisher(refresh.PublisherConfig{Store: memory.NewStore(), Queue: memory.NewQueue(clock), Clock: clock, RouteFunc: r.Route})
	require.ErrorContains(t, err, "DeliveryStore")
}

// value returns the sum of the values of c's series.
func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	sum := 0.0
	for m := range ch {
		var d dto.Metric
		require.NoError(t, m.Write(&d))
		sum += d.GetCounter().GetValue() + d.GetGauge().GetValue()
	}
	return sum
}
