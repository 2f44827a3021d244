package refresh_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// downQueue fails Publish while down.
type downQueue struct {
	*memory.Queue
	down bool
}

func (q *downQueue) Publish(ctx context.Context, events []refresh.Event) error {
	if q.down {
		return errors.New("redis down")
	}
	return q.Queue.Publish(ctx, events)
}

func TestPublisherPublishesCommittedEventsOnce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	q := &downQueue{Queue: b.queue, down: true}
	p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: q, Clock: b.clock})
	require.NoError(t, err)

	b.put(t, "a", `{"timeout": "10m"}`, false) // create, while the queue is down
	_, err = p.RunOnce(ctx)
	require.ErrorContains(t, err, "redis down")
	require.Empty(t, b.queue.Events())

	q.down = false
	b.put(t, "b", `{"timeout": "10m"}`, false)
	res, err := p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.PublishResult{Published: 2}, res)
	require.Equal(t, []string{"create:a", "create:b"}, types(b.queue.Events()), "the event written during the outage is published, in order")
	res, err = p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.PublishResult{}, res, "once")
}

func TestPublisherRevokesEndedAttempts(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	jobs := b.started(t, "trig", "canc", "del", "idle")
	_, _, err := b.svc.Act(ctx, "idle", refresh.ActionCancel) // running: ends it
	require.NoError(t, err)
	_, _, err = b.svc.Act(ctx, "trig", refresh.ActionTrigger)
	require.NoError(t, err)
	_, _, err = b.svc.Act(ctx, "canc", refresh.ActionCancel)
	require.NoError(t, err)
	require.NoError(t, b.svc.Delete(ctx, "del"))
	_, _, err = b.svc.Act(ctx, "idle", refresh.ActionTrigger) // nothing running: nothing to revoke
	require.NoError(t, err)

	p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: b.queue, Clock: b.clock})
	require.NoError(t, err)
	res, err := p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, res.Revoked)
	for id, reason := range map[string]string{"trig": refresh.RevokedSuperseded, "canc": refresh.RevokedCancelled, "del": refresh.RevokedDeleted, "idle": refresh.RevokedCancelled} {
		r, ok := b.queue.Revoked(jobs[id].AttemptUID)
		require.True(t, ok, id)
		require.Equal(t, reason, r.Reason, id)
		require.Equal(t, id, r.ModelID)
		requireTime(t, jobs[id].DeadlineAt, r.DeadlineAt)
	}
	require.Equal(t, []string{"cancel:idle", "trigger:trig", "cancel:canc", "delete:del", "trigger:idle"}, types(b.queue.Events()))
	_, err = b.store.Get(ctx, "del")
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))
}

func TestPublisherStartWakesAndRetries(t *testing.T) {
	b := setup(t)
	q := &downQueue{Queue: b.queue, down: true}
	results := make(chan error, 10)
	p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: q, Clock: b.clock,
		PublishedFunc: func(_ refresh.PublishResult, err error) { results <- err }})
	require.NoError(t, err)
	b.svc.EventsFunc = p.Wake
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()
	require.NoError(t, <-results, "nothing to publish")

	b.put(t, "a", `{"timeout": "10m"}`, false) // wakes the loop
	require.ErrorContains(t, <-results, "redis down")
	q.down = false
	// The first sleep's timer is still registered; the second is the backoff.
	waitFor(t, func() bool { return b.clock.Waiters() == 2 })
	b.clock.Advance(time.Second)
	require.NoError(t, <-results)
	require.Equal(t, []string{"create:a"}, types(b.queue.Events()))
	cancel()
	require.NoError(t, <-done)
}
