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
