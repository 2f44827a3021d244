package scenarios

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// Entry is one line of a timeline: an event and the model's state after it.
type Entry struct {
	At         time.Time
	Event      string
	Kind       string
	Decision   string
	Reason     string
	AttemptNo  int
	RefreshAt  time.Time
	DeadlineAt time.Time
	Disabled   bool

	// The fields of the events of the extensions (docs/policy.md),
	// zero when unused: as refresh.Event has them.
	Cause          string
	Upstream       string
	Unchanged      bool
	Until          time.Time
	OverdueSince   time.Time
	OverdueFor     time.Duration
	State          string
	Missed         int
	DebounceAt     time.Time
	WaitingForSlot bool
}

// DefaultMaxEntries is the number of timeline entries Run produces at most
// unless told otherwise (WithMaxEntries). A spec that would produce more (a
// year of a schedule every minute) is refused with an *EntriesError rather
// than run for minutes and gigabytes.
const DefaultMaxEntries = 10_000

// RunOption changes how Run runs.
type RunOption func(*runOptions)

type runOptions struct {
	maxEntries int
	store      *memory.Store
}

// WithMaxEntries bounds the timeline to n entries (n <= 0: DefaultMaxEntries).
func WithMaxEntries(n int) RunOption {
	return func(o *runOptions) { o.maxEntries = n }
}

// WithStore makes Run keep the model and its history in store (which
// must not hold the spec's model yet) instead of a store of its own, so
// that the caller can read them afterwards.
func WithStore(store *memory.Store) RunOption {
	return func(o *runOptions) { o.store = store }
}

// EntriesError is Run's error when the timeline would grow past its limit.
type EntriesError struct {
	Limit int
	// At is the time the simulation had reached.
	At time.Time
}

func (e *EntriesError) Error() string {
	return fmt.Sprintf("the timeline has more than %d entries (reached at %s): shorten the span from start to until, or raise the limit",
		e.Limit, e.At.UTC().Format(time.RFC3339))
}

// arrival is a worker outcome due at a time.
type arrival struct {
	at      time.Time
	outcome refresh.Outcome
}

// Run simulates spec with the real refresh.Service, Scheduler and Consumer
// on an in-memory store and queue and a virtual clock, and returns the
// timeline. At each instant it applies the actions, then the arriving
// outcomes, then a scheduler pass (timeouts, then starts), and repeats
// until nothing more is due at that instant; events at Until count.
//
// It stops with ctx's error as soon as ctx ends (it looks at every step),
// and with an *EntriesError once the timeline would exceed the maximum
// number of entries (DefaultMaxEntries, or WithMaxEntries); it then returns
// the timeline so far.
func Run(ctx context.Context, spec Spec, lim refresh.Limits, opts ...RunOption) ([]Entry, error) {
	o := runOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxEntries <= 0 {
		o.maxEntries = DefaultMaxEntries
	}
	clock := refresh.NewVirtualClock(spec.Start)
	store := o.store
	if store == nil {
		store = memory.NewStore()
	}
	q := memory.NewQueue(clock)
	svc := &refresh.Service{Store: store, Clock: clock, Limits: lim}
	sched, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: q, Clock: clock})
	if err != nil {
		return nil, err
	}
	cons, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: q, Clock: clock})
	if err != nil {
		return nil, err
	}
	pub, err := refresh.NewPublisher(refresh.PublisherConfig{Store: store, Queue: q, Clock: clock})
	if err != nil {
		return nil, err
	}
	queue := spec.Model.Queue
	if queue == "" {
		queue = refresh.DefaultQueue
	}
	model, _, err := svc.Put(ctx, refresh.PutRequest{ID: spec.Model.ID, Queue: queue, Payload: spec.Model.Payload, Policy: spec.Model.Policy, Trigger: spec.Model.Trigger})
	if err != nil {
		return nil, err
	}
	timeout := time.Duration(model.Policy.Timeout)

	var timeline []Entry
	add := func(e Entry) error {
		if len(timeline) >= o.maxEntries {
			return &EntriesError{Limit: o.maxEntries, At: clock.Now()}
		}
		timeline = append(timeline, e)
		return nil
	}
	record := func() error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			res, err := pub.RunOnce(ctx)
			if err != nil {
				return err
			}
			if res.Published == 0 {
				break
			}
		}
		for _, e := range q.Events() {
			if err := add(entry(e)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := record(); err != nil {
		return nil, err
	}

	started := 0 // attempts started so far
	var pending []arrival
	if st := spec.Model.State; st != nil {
		if err := seed(ctx, store, spec.Model); err != nil {
			return nil, err
		}
		timeline = timeline[:0] // the model is not new: no create entry
		if st.AttemptUID != "" {
			b := spec.behaviour(0, st.StartedAt)
			started++
			job := refresh.Job{ModelID: spec.Model.ID, AttemptUID: st.AttemptUID, StartedAt: st.StartedAt}
			if a, ok := deliver(job, b, timeout); ok {
				if a.at.Before(spec.Start) {
					a.at = spec.Start
				}
				pending = append(pending, a)
			}
		}
	}
	actions := spec.Actions
	// work does everything due at the current instant once, and reports
	// whether anything happened.
	work := func(now time.Time) (bool, error) {
		did := false
		for len(actions) > 0 && !actions[0].At.After(now) {
			m, d, err := svc.Act(ctx, spec.Model.ID, actions[0].Do)
			if err != nil {
				return false, fmt.Errorf("action %s at %s: %w", actions[0].Do, actions[0].At.Format(time.RFC3339), err)
			}
			actions = actions[1:]
			did = true
			if err := record(); err != nil {
				return false, err
			}
			if d.Unchanged {
				// Nothing is published, but the timeline still lists the action.
				if err := add(entry(refresh.NewEvent(m, d, now))); err != nil {
					return false, err
				}
			}
		}
		sort.SliceStable(pending, func(i, j int) bool { return pending[i].at.Before(pending[j].at) })
		n := 0
		for n < len(pending) && !pending[n].at.After(now) {
			o := pending[n].outcome
			if rule := refresh.CheckOutcome(o, now); rule != "" {
				return false, fmt.Errorf("the snooze of attempt %s, arriving at %s: %s", o.AttemptUID, now.Format(time.RFC3339), rule)
			}
			q.Deliver(o)
			n++
		}
		if n > 0 {
			pending = pending[n:]
			did = true
			if _, err := cons.RunOnce(ctx); err != nil {
				return false, err
			}
			if err := record(); err != nil {
				return false, err
			}
		}
		res, err := sched.RunOnce(ctx)
		if err != nil {
			return false, err
		}
		before := len(timeline)
		if err := record(); err != nil {
			return false, err
		}
		if res.Started+res.TimedOut > 0 || len(timeline) > before {
			did = true // a debounce, a freshness_lost or a skip may make more due
		}
		for _, job := range q.Take(queue, 1<<30) {
			b := spec.behaviour(started, job.StartedAt)
			started++
			if a, ok := deliver(job, b, timeout); ok {
				pending = append(pending, a)
			}
		}
		return did, nil
	}

	now := spec.Start
	for !now.After(spec.Until) {
		clock.Set(now)
		for {
			if err := ctx.Err(); err != nil {
				return timeline, err
			}
			did, err := work(now)
			if err != nil {
				return timeline, err
			}
			if !did {
				break
			}
		}
		next, ok := time.Time{}, false
		consider := func(t time.Time) {
			if t.After(now) && (!ok || t.Before(next)) {
				next, ok = t, true
			}
		}
		if len(actions) > 0 {
			consider(actions[0].At)
		}
		for _, a := range pending {
			consider(a.at)
		}
		if due, has, err := store.NextDue(ctx); err != nil {
			return timeline, err
		} else if has {
			consider(due)
		}
		if !ok {
			break
		}
		now = next
	}
	return timeline, nil
}

// seed gives the model sm.State and sm.CreatedAt, as a write that
// publishes nothing.
func seed(ctx context.Context, store *memory.Store, sm SpecModel) error {
	return store.Modify(ctx, []string{sm.ID}, func(found []refresh.Model) (refresh.Batch, error) {
		if len(found) == 0 {
			return refresh.Batch{}, refresh.Errorf(refresh.ENOTFOUND, "model %q not found", sm.ID)
		}
		m := found[0]
		m.State = *sm.State
		if !sm.CreatedAt.IsZero() {
			m.CreatedAt = sm.CreatedAt
		}
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	})
}

// deliver returns the outcome job's behaviour b produces and when it
// arrives; an attempt that runs as long as the timeout or longer delivers
// nothing.
func deliver(job refresh.Job, b Behaviour, timeout time.Duration) (arrival, bool) {
	if b.Outcome == behaveTimeout || b.After >= timeout {
		return arrival{}, false
	}
	o := refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess, Unchanged: b.Unchanged}
	switch b.Outcome {
	case behaveFailure:
		o.Type, o.Kind, o.Message, o.Retryable, o.UserMessage = refresh.OutcomeFailure, b.Kind, b.Message, b.Retryable, b.UserMessage
	case behaveSnooze:
		o.Type, o.Until, o.For = refresh.OutcomeSnooze, b.Until, refresh.Duration(b.For)
	}
	return arrival{at: job.StartedAt.Add(b.After), outcome: o}, true
}

func entry(e refresh.Event) Entry {
	en := Entry{At: e.At.UTC(), Event: e.Type, AttemptNo: e.AttemptNo, RefreshAt: e.RefreshAt, DeadlineAt: e.DeadlineAt, Disabled: e.Disabled,
		Cause: e.Cause, Upstream: e.Upstream, Unchanged: e.Unchanged, Until: e.Until, OverdueSince: e.OverdueSince,
		OverdueFor: e.OverdueFor, State: e.State, Missed: e.Missed, DebounceAt: e.DebounceAt, WaitingForSlot: e.WaitingForSlot}
	switch e.Type {
	case refresh.EventFailure, refresh.EventTimeout:
		en.Kind, en.Decision, en.Reason = e.Kind, e.Decision, e.Reason
	case refresh.EventWait:
		en.Reason = e.Reason
	}
	return en
}
