package queue

import "github.com/freshen-dev/freshen/refresh"

// Lifecycle names: the "type" field of the entries of the events stream.
// Event types without a lifecycle name of their own (create, status,
// trigger, pause, resume, cancel, and debounce, wait, freshness_lost,
// freshness_restored) are published under their event type.
const (
	LifecycleStarted        = "started"
	LifecycleSucceeded      = "succeeded"
	LifecycleFailed         = "failed"
	LifecycleRetryScheduled = "retry_scheduled"
	LifecycleDisabled       = "disabled"
	LifecycleEnabled        = "enabled"
	LifecycleStale          = "stale"
	// LifecycleSkipped is a start skipped by the catch-up window (event
	// skip), LifecycleSnoozed an attempt ended by a snooze (event snooze).
	LifecycleSkipped = "skipped"
	LifecycleSnoozed = "snoozed"
)

// lifecycle returns the stream entry types of e. A failure or timeout is
// published twice: once as failed, then as retry_scheduled (decision retry,
// retry_aligned or wait_next) or disabled (decision disable).
func lifecycle(e refresh.Event) []string {
	switch e.Type {
	case refresh.EventStart:
		return []string{LifecycleStarted}
	case refresh.EventSuccess:
		return []string{LifecycleSucceeded}
	case refresh.EventEnable:
		return []string{LifecycleEnabled}
	case refresh.EventStale:
		return []string{LifecycleStale}
	case refresh.EventSkip:
		return []string{LifecycleSkipped}
	case refresh.EventSnooze:
		return []string{LifecycleSnoozed}
	case refresh.EventFailure, refresh.EventTimeout:
		switch e.Decision {
		case refresh.DecisionDisable:
			return []string{LifecycleFailed, LifecycleDisabled}
		case refresh.DecisionRetry, refresh.DecisionRetryAligned, refresh.DecisionWaitNext:
			return []string{LifecycleFailed, LifecycleRetryScheduled}
		}
		return []string{LifecycleFailed}
	}
	return []string{e.Type}
}
