package refresh

import "sync/atomic"

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

	// Counters of the extensions (DESIGN.md section 6).

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
