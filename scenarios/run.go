package scenarios

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// Entry is one line of a timeline: an event and the model's state after it.
type Entry struct {
	At time.Time
	// Model is the model of the entry in the multi-model form; "" with
	// one model.
	Model      string
	Event      string
	Kind       string
	Decision   string
	Reason     string
	AttemptNo  int
	RefreshAt  time.Time
	DeadlineAt time.Time
	Disabled   bool

	// The details of the extensions (docs/policy.md), zero when
	// unused.

	// Cause is what asked for a trigger or debounce: upstream, or "" (an
	// action).
	Cause string
	// Upstream is the upstream whose success caused a trigger, or whose
	// success left the model waiting (event upstream).
	Upstream string
	// Unchanged marks a success whose data did not change.
	Unchanged bool
	// Until is the time a snooze asked for.
	Until time.Time
	// Missed is how many scheduled occurrences a skip passed over.
	Missed int
	// OverdueSince is the start of the freshness episode of a
	// freshness_lost or freshness_restored; OverdueFor is the length of
	// the episode a freshness_restored ends.
	OverdueSince time.Time
	OverdueFor   time.Duration
	// State is the model's state when it became overdue (freshness_lost).
	State string
	// DebounceAt, WaitingForSlot and WaitingUntil are the model's
	// debounce_at, waiting_for_slot and waiting_until (set while it waits
	// for a rate limit: when the limit admits its start, as known when the
	// wait began) after the entry.
	DebounceAt     time.Time
	WaitingForSlot bool
	WaitingUntil   time.Time
}

// EventUpstream is the event of a timeline entry (the simulator's own: no
// lifecycle event is published) that shows a dependent an upstream's
// success did not trigger because its upstream condition does not hold;
// its Reason says what it waits for (refresh.UpstreamWaiting).
const EventUpstream = "upstream"

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
	// field names the behaviour that made it.
	field string
}

// simModel is a model of the run and how its attempts behave.
type simModel struct {
	SpecModel
	started int // attempts started so far
}

// models returns the models of spec, each with its behaviours.
func (s Spec) models() []*simModel {
	if len(s.Models) == 0 {
		m := s.Model
		m.Attempts, m.Default = s.Attempts, s.Default
		return []*simModel{{SpecModel: m}}
	}
	out := make([]*simModel, len(s.Models))
	for i, m := range s.Models {
		out[i] = &simModel{SpecModel: m}
	}
	return out
}

// Run simulates spec with the real refresh.Service, Scheduler, Consumer
// and Publisher on an in-memory store and queue and a virtual clock, and
// returns the timeline. At each instant it applies the actions, then the
// arriving outcomes, then the upstream triggers their successes bring (the
// Publisher's Service.Propagate), then a scheduler pass (timeouts, then
// starts), and repeats until nothing more is due at that instant; events
// at Until count. It goes on to the next instant something is due: an
// action, an outcome, a planned start, or the instant a rate limit that
// held a start back admits the next (TickResult.NextAdmit), when the
// scheduler of serve wakes too.
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
	prop := &refresh.Service{Store: &propagateStore{Store: store}, Clock: clock, Limits: lim}
	pub, err := refresh.NewPublisher(refresh.PublisherConfig{Store: store, Queue: q, Clock: clock, PropagateFunc: prop.Propagate})
	if err != nil {
		return nil, err
	}
	for _, l := range spec.Limits {
		if _, err := store.PutLimit(ctx, l, false); err != nil {
			return nil, err
		}
	}
	if len(spec.Starts) > 0 {
		err := store.Modify(ctx, nil, func([]refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Starts: spec.Starts}, nil
		})
		if err != nil {
			return nil, err
		}
	}
	multi := len(spec.Models) > 0
	models := spec.models()
	byID := make(map[string]*simModel, len(models))
	var queues []string
	timeouts := make(map[string]time.Duration, len(models))
	for _, sm := range models {
		byID[sm.ID] = sm
		if sm.Queue == "" {
			sm.Queue = refresh.DefaultQueue
		}
		if !slices.Contains(queues, sm.Queue) {
			queues = append(queues, sm.Queue)
		}
	}

	var timeline []Entry
	add := func(e Entry) error {
		if len(timeline) >= o.maxEntries {
			return &EntriesError{Limit: o.maxEntries, At: clock.Now()}
		}
		if !multi {
			e.Model = ""
		}
		timeline = append(timeline, e)
		return nil
	}
	// record publishes the events written so far, bringing the upstream
	// triggers of their successes, and adds them to the timeline, each
	// success followed by the dependents it left waiting.
	record := func() error {
		var events []refresh.Event
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
			events = append(events, q.Events()...)
		}
		for _, e := range events {
			en := entry(e)
			if en.WaitingForSlot {
				// The event does not carry waiting_until; the model, as
				// the step left it, does (a wait keeps it until it ends).
				m, err := store.Get(ctx, e.ModelID)
				if err != nil {
					return err
				}
				en.WaitingUntil = m.WaitingUntil
			}
			if err := add(en); err != nil {
				return err
			}
		}
		for _, e := range events {
			if e.Type != refresh.EventSuccess || e.Unchanged {
				continue
			}
			for _, dep := range models {
				if !slices.Contains(dep.Upstreams, e.ModelID) || triggeredBy(events, dep.ID, e.ModelID) {
					continue
				}
				w, ok, err := upstreamWait(ctx, store, dep.ID, e)
				if err != nil {
					return err
				}
				if ok {
					if err := add(w); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for _, sm := range models {
		model, _, err := svc.Put(ctx, refresh.PutRequest{ID: sm.ID, Queue: sm.Queue, RateKey: sm.RateKey, Payload: sm.Payload, Policy: sm.Policy,
			Upstreams: sm.Upstreams, UpstreamsMode: sm.UpstreamsMode, Trigger: sm.Trigger})
		if err != nil {
			return nil, err
		}
		timeouts[sm.ID] = time.Duration(model.Policy.Timeout)
	}
	if err := record(); err != nil {
		return nil, err
	}

	// behaviour returns how the next attempt of sm, started at start,
	// behaves.
	behaviour := func(sm *simModel, start time.Time) Behaviour {
		i := sm.started
		sm.started++
		if !multi {
			return spec.behaviour(i, start)
		}
		if i < len(sm.Attempts) {
			return sm.Attempts[i]
		}
		return sm.Default
	}
	var pending []arrival
	if st := spec.Model.State; st != nil && !multi {
		sm := models[0]
		if err := seed(ctx, store, spec.Model); err != nil {
			return nil, err
		}
		timeline = timeline[:0] // the model is not new: no create entry
		if st.AttemptUID != "" {
			b := behaviour(sm, st.StartedAt)
			job := refresh.Job{ModelID: sm.ID, AttemptUID: st.AttemptUID, StartedAt: st.StartedAt}
			if a, ok := deliver(job, b, timeouts[sm.ID]); ok {
				if a.at.Before(spec.Start) {
					a.at = spec.Start
				}
				pending = append(pending, a)
			}
		}
	}
	actions := spec.Actions
	// nextAdmit is when a rate limit that held a start back in the last
	// pass admits a start again (zero: none held one back).
	var nextAdmit time.Time
	// work does everything due at the current instant once, and reports
	// whether anything happened.
	work := func(now time.Time) (bool, error) {
		did := false
		for len(actions) > 0 && !actions[0].At.After(now) {
			a := actions[0]
			id := a.Model
			if id == "" {
				id = models[0].ID
			}
			m, d, err := svc.Act(ctx, id, a.Do)
			if err != nil {
				return false, fmt.Errorf("action %s of %s at %s: %w", a.Do, id, a.At.Format(time.RFC3339), err)
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
		// Outcomes arrive in time order, and at one instant by model id.
		sort.SliceStable(pending, func(i, j int) bool {
			if !pending[i].at.Equal(pending[j].at) {
				return pending[i].at.Before(pending[j].at)
			}
			return pending[i].outcome.ModelID < pending[j].outcome.ModelID
		})
		n := 0
		for n < len(pending) && !pending[n].at.After(now) {
			a := pending[n]
			if a.outcome.Type == refresh.OutcomeSnooze && !a.outcome.Until.IsZero() && !a.outcome.Until.After(now) {
				return false, fmt.Errorf("%s.until: must be after the outcome's arrival at %s, got %s (a worker's snooze that asks for a past time is dead-lettered)",
					a.field, utc(now), utc(a.outcome.Until))
			}
			q.Deliver(a.outcome)
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
		nextAdmit = res.NextAdmit
		before := len(timeline)
		if err := record(); err != nil {
			return false, err
		}
		if res.Started+res.TimedOut > 0 || len(timeline) > before {
			did = true
		}
		for _, queue := range queues {
			for _, job := range q.Take(queue, 1<<30) {
				sm := byID[job.ModelID]
				b := behaviour(sm, job.StartedAt)
				if a, ok := deliver(job, b, timeouts[sm.ID]); ok {
					pending = append(pending, a)
				}
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
		consider(nextAdmit)
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

// propagateStore is the store Service.Propagate is given: the memory
// store's Upstreams takes the store's lock, which Modify holds while its
// function runs, and Propagate reads the upstreams from within Modify. It
// answers Upstreams inside Modify from the views read just before, which
// nothing can change meanwhile: the run is one goroutine.
type propagateStore struct {
	*memory.Store
	inside map[string]refresh.Upstream // while Modify's function runs
}

func (p *propagateStore) Modify(ctx context.Context, ids []string, fn func([]refresh.Model) (refresh.Batch, error)) error {
	all, err := p.Store.List(ctx, refresh.Filter{Limit: 1 << 30})
	if err != nil {
		return err
	}
	ups := make(map[string]refresh.Upstream, len(all))
	for _, m := range all {
		ups[m.ID] = refresh.UpstreamOf(m)
	}
	return p.Store.Modify(ctx, ids, func(found []refresh.Model) (refresh.Batch, error) {
		p.inside = ups
		defer func() { p.inside = nil }()
		return fn(found)
	})
}

func (p *propagateStore) Upstreams(ctx context.Context, ids []string) (map[string]refresh.Upstream, error) {
	if p.inside == nil {
		return p.Store.Upstreams(ctx, ids)
	}
	out := make(map[string]refresh.Upstream, len(ids))
	for _, id := range ids {
		if u, ok := p.inside[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

// triggeredBy reports whether events hold a trigger of model id caused by
// upstream's success.
func triggeredBy(events []refresh.Event, id, upstream string) bool {
	for _, e := range events {
		if e.ModelID == id && e.Type == refresh.EventTrigger && e.Cause == refresh.CauseUpstream && e.Upstream == upstream {
			return true
		}
	}
	return false
}

// upstreamWait returns the entry that explains why success, an upstream's
// success that changed the data, did not trigger its dependent id, if it
// should be shown: the dependent's condition does not hold (an entry
// EventUpstream whose reason says what it waits for), or it holds but the
// dependent is disabled (an upstream trigger that changes nothing, listed
// as no-op actions are). A dependent whose run already covers the change
// gets none.
func upstreamWait(ctx context.Context, store *memory.Store, id string, success refresh.Event) (Entry, bool, error) {
	dep, err := store.Get(ctx, id)
	if err != nil {
		return Entry{}, false, err
	}
	ups, err := store.Upstreams(ctx, dep.Upstreams)
	if err != nil {
		return Entry{}, false, err
	}
	at := success.At
	if !refresh.UpstreamsReady(dep, ups) {
		e := entry(refresh.NewEvent(dep, refresh.Decision{Event: EventUpstream, Upstream: success.ModelID, AttemptNo: dep.AttemptNo}, at))
		e.Upstream, e.Reason = success.ModelID, refresh.UpstreamWaiting(dep, ups)
		return e, true, nil
	}
	after, d := refresh.UpstreamTrigger(dep, ups, success.ModelID, at)
	if d.Event == "" || !d.Unchanged {
		return Entry{}, false, nil
	}
	e := entry(refresh.NewEvent(after, d, at))
	e.Reason = d.Why
	return e, true, nil
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
	return arrival{at: job.StartedAt.Add(b.After), outcome: o, field: b.field}, true
}

func entry(e refresh.Event) Entry {
	en := Entry{At: e.At.UTC(), Model: e.ModelID, Event: e.Type, AttemptNo: e.AttemptNo, RefreshAt: e.RefreshAt, DeadlineAt: e.DeadlineAt, Disabled: e.Disabled,
		Cause: e.Cause, Upstream: e.Upstream, Unchanged: e.Unchanged, Until: e.Until, Missed: e.Missed,
		OverdueSince: e.OverdueSince, OverdueFor: e.OverdueFor, State: e.State, DebounceAt: e.DebounceAt, WaitingForSlot: e.WaitingForSlot}
	switch e.Type {
	case refresh.EventFailure, refresh.EventTimeout:
		en.Kind, en.Decision, en.Reason = e.Kind, e.Decision, e.Reason
	case refresh.EventWait, refresh.EventWaitTooLong:
		en.Reason = e.Reason
	}
	return en
}
