package memory

import (
	"context"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

var (
	_ refresh.Queue    = (*Queue)(nil)
	_ refresh.Outcomes = (*Queue)(nil)
)

// Queue is an in-process job queue, outcome inbox and event log.
type Queue struct {
	clock    refresh.Clock
	mu       sync.Mutex
	jobs     map[string][]refresh.Job
	outcomes []refresh.Outcome
	pending  []refresh.Outcome
	events   []refresh.Event
	revoked  map[string]refresh.Revocation // by attempt uid
	dead     []DeadLetter
	arrived  chan struct{} // signalled when an outcome arrives
}

// DeadLetter is an outcome set aside, with the reason.
type DeadLetter struct {
	Outcome refresh.Outcome
	Reason  string
}

// NewQueue returns an empty queue; clock bounds Receive's wait.
func NewQueue(clock refresh.Clock) *Queue {
	return &Queue{clock: clock, jobs: map[string][]refresh.Job{}, revoked: map[string]refresh.Revocation{}, arrived: make(chan struct{}, 1)}
}

// Push appends jobs to their queues.
func (q *Queue) Push(_ context.Context, jobs []refresh.Job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range jobs {
		q.jobs[j.Queue] = append(q.jobs[j.Queue], j)
	}
	return nil
}

// Take removes and returns up to max jobs of queue, oldest first. Jobs of
// revoked attempts are dropped, as a worker drops them.
func (q *Queue) Take(queue string, max int) []refresh.Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []refresh.Job
	for len(out) < max && len(q.jobs[queue]) > 0 {
		j := q.jobs[queue][0]
		q.jobs[queue] = q.jobs[queue][1:]
		if _, ok := q.revoked[j.AttemptUID]; !ok {
			out = append(out, j)
		}
	}
	return out
}

// Revoke records the revocations.
func (q *Queue) Revoke(_ context.Context, revoked []refresh.Revocation) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range revoked {
		q.revoked[r.AttemptUID] = r
	}
	return nil
}

// Revoked returns the revocation of attempt uid, if any.
func (q *Queue) Revoked(uid string) (refresh.Revocation, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, ok := q.revoked[uid]
	return r, ok
}

// Publish appends events to the event log.
func (q *Queue) Publish(_ context.Context, events []refresh.Event) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events = append(q.events, events...)
	return nil
}

// Events returns the events published so far and forgets them.
func (q *Queue) Events() []refresh.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.events
	q.events = nil
	return out
}

// DeadLetters returns the outcomes set aside so far.
func (q *Queue) DeadLetters() []DeadLetter {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]DeadLetter(nil), q.dead...)
}

// Deliver adds a worker's outcome to the inbox.
func (q *Queue) Deliver(o refresh.Outcome) {
	q.mu.Lock()
	q.outcomes = append(q.outcomes, o)
	q.mu.Unlock()
	select {
	case q.arrived <- struct{}{}:
	default:
	}
}

// Receive moves up to max outcomes to the pending list and returns them,
// waiting up to block (on the queue's clock) if there are none.
func (q *Queue) Receive(ctx context.Context, max int, block time.Duration) ([]refresh.Outcome, error) {
	if out := q.take(max); len(out) > 0 || block <= 0 {
		return out, nil
	}
	select {
	case <-ctx.Done():
		return nil, nil
	case <-q.arrived:
	case <-q.clock.After(block):
	}
	return q.take(max), nil
}

func (q *Queue) take(max int) []refresh.Outcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.outcomes))
	out := append([]refresh.Outcome(nil), q.outcomes[:n]...)
	q.outcomes = q.outcomes[n:]
	now := q.clock.Now()
	for i := range out {
		out[i].ArrivedAt = now
	}
	q.pending = append(q.pending, out...)
	return out
}

// Ack drops the pending outcomes but those in keep.
func (q *Queue) Ack(_ context.Context, keep []refresh.Outcome) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending[:0:0], keep...)
	return nil
}

// DeadLetter sets o aside with reason.
func (q *Queue) DeadLetter(_ context.Context, o refresh.Outcome, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dead = append(q.dead, DeadLetter{Outcome: o, Reason: reason})
	return nil
}
