package refresh

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts what the loops and the service did. It is safe for
// concurrent use; cmd/freshen exports it to Prometheus.
type Metrics struct {
	Ticks     atomic.Int64 // scheduler passes
	Started   atomic.Int64 // attempts started
	TimedOut  atomic.Int64 // attempts that reached their deadline
	Succeeded atomic.Int64
	Failed    atomic.Int64 // failures, timeouts included
	Retried   atomic.Int64 // failures that planned a retry or a new round
	Disabled  atomic.Int64
	Stale     atomic.Int64 // outcomes fenced off (late, duplicated, superseded, unknown model)
	Outcomes  atomic.Int64 // outcomes received
	Errors    atomic.Int64 // loop passes that failed (and were retried)
	// Deferred counts outcomes kept for a later pass because another
	// transaction held their model (once per pass that kept them).
	Deferred atomic.Int64
	// DeadLettered counts outcomes the store refused, set aside.
	DeadLettered atomic.Int64

	// Counters of the extensions (docs/policy.md).

	// Unchanged counts the successes that said the data did not change
	// (they are counted in Succeeded too).
	Unchanged atomic.Int64
	// Snoozed counts attempts that ended with a snooze (a snooze that came
	// too late is a failure, counted in Failed).
	Snoozed atomic.Int64
	// Skipped counts starts skipped by the catch-up window.
	Skipped atomic.Int64
	// Debounced counts debounce windows that took effect; Triggers counts
	// the trigger events (each trigger of a window included).
	Debounced atomic.Int64
	Triggers  atomic.Int64
	// SlotWaits counts the waits of due models for a concurrency slot (one
	// per wait, not one per tick).
	SlotWaits atomic.Int64
	// FreshnessLost and FreshnessRestored count the freshness episodes
	// opened and ended by a success (an edit closes one silently).
	FreshnessLost     atomic.Int64
	FreshnessRestored atomic.Int64
	// Overdue is a gauge: the models whose freshness episode is open
	// (overdue_since set), as last counted in the store. The counters of
	// one process cannot give it (episodes open in one instance and close
	// in another, or close silently), so the caller that exports the
	// metrics sets it from a count of the store.
	Overdue atomic.Int64
	// WaitingForSlot is a gauge set the same way: the models with
	// waiting_for_slot set.
	WaitingForSlot atomic.Int64

	// HistoryPrunedByAge and HistoryPrunedByCount count the attempts the
	// Pruner deleted for their age and past the number kept per model.
	HistoryPrunedByAge   atomic.Int64
	HistoryPrunedByCount atomic.Int64

	// limits are the counters and gauges of each limit by its name
	// (LimitStats).
	limitsMu sync.Mutex
	limits   map[string]*LimitStat

	// Observer, if set, receives the durations the loops measure (start
	// lateness, attempt durations, pass lengths). Set it before the loops
	// start; it is not changed afterwards.
	Observer Observer
}

// count adds one committed event to the counters.
func (m *Metrics) count(e Event) {
	switch e.Type {
	case EventStart:
		m.Started.Add(1)
	case EventSuccess:
		m.Succeeded.Add(1)
	case EventStale:
		m.Stale.Add(1)
	case EventTimeout:
		m.TimedOut.Add(1)
	case EventSnooze:
		m.Snoozed.Add(1)
	case EventSkip:
		m.Skipped.Add(1)
	case EventDebounce:
		m.Debounced.Add(1)
	case EventTrigger:
		m.Triggers.Add(1)
	case EventWait:
		m.SlotWaits.Add(1)
	case EventFreshnessLost:
		m.FreshnessLost.Add(1)
	case EventFreshnessRestored:
		m.FreshnessRestored.Add(1)
	}
	if e.Type == EventSuccess && e.Unchanged {
		m.Unchanged.Add(1)
	}
	if e.Type == EventFailure || e.Type == EventTimeout {
		m.Failed.Add(1)
		if e.Decision == DecisionDisable {
			m.Disabled.Add(1)
		} else {
			m.Retried.Add(1)
		}
	}
}

// Loop names a loop whose passes an Observer times.
type Loop uint8

// The loops whose passes are timed.
const (
	LoopScheduler Loop = iota
	LoopConsumer
	LoopPrune
)

// String returns the loop's name: scheduler, consumer or prune.
func (l Loop) String() string {
	switch l {
	case LoopScheduler:
		return "scheduler"
	case LoopConsumer:
		return "consumer"
	case LoopPrune:
		return "prune"
	}
	return "unknown"
}

// Observer receives the durations the loops measure, on the loops' own
// clock. Its methods are called on the loops' paths, once per attempt or
// per pass: they must be safe for concurrent use and cheap (refresh/http
// implements them with Prometheus histograms).
type Observer interface {
	// ObserveStartLateness is called for each attempt started, with how
	// long after its refresh_at it started.
	ObserveStartLateness(d time.Duration)
	// ObserveAttemptDuration is called for each attempt an outcome ended
	// (success, failure, snooze), with the time from its start to the
	// outcome's arrival.
	ObserveAttemptDuration(d time.Duration)
	// ObservePass is called after each pass of loop that did work, with
	// its length.
	ObservePass(loop Loop, d time.Duration)
}

// ModelCounts counts models by state, as a store reads them at one time.
// The states Running, Failing, Disabled, Paused and Idle part the models
// by precedence: disabled, then paused, then running, then failing
// (consecutive_failures > 0), then idle; their sum is the number of
// models. Overdue and WaitingForSlot count the models with an open
// freshness episode and those waiting for a concurrency slot, whatever
// their state.
type ModelCounts struct {
	Running, Failing, Disabled, Paused, Idle int64
	Overdue, WaitingForSlot                  int64
}

// Add adds the state of m to c: the store implementations count with it,
// or with the same rules in their own query language.
func (c *ModelCounts) Add(m Model) {
	switch {
	case m.Disabled():
		c.Disabled++
	case m.Paused:
		c.Paused++
	case m.Running():
		c.Running++
	case m.ConsecutiveFailures > 0:
		c.Failing++
	default:
		c.Idle++
	}
	if !m.OverdueSince.IsZero() {
		c.Overdue++
	}
	if m.WaitingForSlot {
		c.WaitingForSlot++
	}
}

// Total returns the number of models counted.
func (c ModelCounts) Total() int64 { return c.Running + c.Failing + c.Disabled + c.Paused + c.Idle }

// observeLateness passes a start's lateness to the Observer, if any.
func (m *Metrics) observeLateness(d time.Duration) {
	if m.Observer != nil {
		m.Observer.ObserveStartLateness(d)
	}
}

// observeAttempt passes an attempt's duration to the Observer, if any.
func (m *Metrics) observeAttempt(d time.Duration) {
	if m.Observer != nil {
		m.Observer.ObserveAttemptDuration(d)
	}
}

// observePass passes a loop pass's length to the Observer, if any.
func (m *Metrics) observePass(l Loop, d time.Duration) {
	if m.Observer != nil {
		m.Observer.ObservePass(l, d)
	}
}

// LimitStat is what the scheduler saw of one limit (Metrics.LimitStats).
type LimitStat struct {
	// Limit is the limit's name (Limit.Name, e.g. "rate_key:api.example.com").
	Limit string
	// Held counts the starts the limit held back, once per wait (the wait
	// events naming it).
	Held int64
	// Wait is a gauge: how long the longest current waiter of the limit has
	// waited (now - refresh_at), as of the last pass that saw the limit; 0
	// when that pass found none waiting.
	Wait time.Duration
}

// LimitWait is the longest wait for one limit that a pass saw.
type LimitWait struct {
	Limit string
	Wait  time.Duration
}

// LimitStats returns what the scheduler saw of each limit it ever met, by
// name: the freshen_limit_held_total and freshen_limit_wait_seconds
// series.
func (m *Metrics) LimitStats() []LimitStat {
	m.limitsMu.Lock()
	defer m.limitsMu.Unlock()
	out := make([]LimitStat, 0, len(m.limits))
	for _, st := range m.limits {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b LimitStat) int { return strings.Compare(a.Limit, b.Limit) })
	return out
}

// observeLimits adds the waits a committed pass began (held: the name of
// each wait's limit) and sets the longest waits it saw.
func (m *Metrics) observeLimits(held []string, waits []LimitWait) {
	if len(held) == 0 && len(waits) == 0 {
		return
	}
	m.limitsMu.Lock()
	defer m.limitsMu.Unlock()
	stat := func(name string) *LimitStat {
		if m.limits == nil {
			m.limits = map[string]*LimitStat{}
		}
		st := m.limits[name]
		if st == nil {
			st = &LimitStat{Limit: name}
			m.limits[name] = st
		}
		return st
	}
	for _, name := range held {
		stat(name).Held++
	}
	for _, w := range waits {
		stat(w.Limit).Wait = w.Wait
	}
}
