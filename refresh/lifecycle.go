package refresh

// Lifecycle names: how the events stream names its entries and webhooks
// name their events. Most events keep their type (create, update, status,
// trigger, pause, resume, cancel, stale, debounce, wait, freshness_lost,
// freshness_restored); the others are named for what happened to the
// model (docs/transitions.md: an event skip is published as
// skipped).
const (
	LifecycleStarted        = "started"
	LifecycleSucceeded      = "succeeded"
	LifecycleRecovered      = "recovered"
	LifecycleFailed         = "failed"
	LifecycleRetryScheduled = "retry_scheduled"
	LifecycleDisabled       = "disabled"
	LifecycleEnabled        = "enabled"
	LifecycleDeleted        = "deleted"
	LifecycleSkipped        = "skipped"
	LifecycleSnoozed        = "snoozed"
)

// LifecycleNames are every name Lifecycle returns, in the order of
// the docs.
var LifecycleNames = []string{
	EventCreate, EventUpdate, LifecycleStarted, LifecycleSucceeded, LifecycleRecovered, LifecycleFailed,
	LifecycleRetryScheduled, LifecycleDisabled, LifecycleEnabled, EventStale, EventStatus, EventTrigger,
	EventPause, EventResume, EventCancel, LifecycleDeleted, LifecycleSkipped, LifecycleSnoozed,
	EventDebounce, EventWait, EventFreshnessLost, EventFreshnessRestored,
}

// Lifecycle returns the lifecycle names of e, one entry of the events
// stream (and one webhook event) each. A failure or timeout has two:
// failed, then retry_scheduled (decision retry, retry_aligned or
// wait_next) or disabled (decision disable); a success that ends a streak
// of failures also has two: succeeded, then recovered.
func (e Event) Lifecycle() []string {
	switch e.Type {
	case EventStart:
		return []string{LifecycleStarted}
	case EventSuccess:
		if e.Recovered {
			return []string{LifecycleSucceeded, LifecycleRecovered}
		}
		return []string{LifecycleSucceeded}
	case EventEnable:
		return []string{LifecycleEnabled}
	case EventDelete:
		return []string{LifecycleDeleted}
	case EventSkip:
		return []string{LifecycleSkipped}
	case EventSnooze:
		return []string{LifecycleSnoozed}
	case EventFailure, EventTimeout:
		switch e.Decision {
		case DecisionDisable:
			return []string{LifecycleFailed, LifecycleDisabled}
		case DecisionRetry, DecisionRetryAligned, DecisionWaitNext:
			return []string{LifecycleFailed, LifecycleRetryScheduled}
		}
		return []string{LifecycleFailed}
	}
	return []string{e.Type}
}
