package queue

import "github.com/freshen-dev/freshen/refresh"

// The types of the entries of the events stream, for those who read it
// with this package: the lifecycle names of refresh (refresh.Event.Lifecycle
// gives an event's). Other event types are published under their own
// name (create, update, status, trigger, pause, resume, cancel, stale,
// debounce, wait, freshness_lost, freshness_restored).
const (
	LifecycleStarted        = refresh.LifecycleStarted
	LifecycleSucceeded      = refresh.LifecycleSucceeded
	LifecycleRecovered      = refresh.LifecycleRecovered
	LifecycleFailed         = refresh.LifecycleFailed
	LifecycleRetryScheduled = refresh.LifecycleRetryScheduled
	LifecycleDisabled       = refresh.LifecycleDisabled
	LifecycleEnabled        = refresh.LifecycleEnabled
	LifecycleDeleted        = refresh.LifecycleDeleted
	LifecycleSkipped        = refresh.LifecycleSkipped
	LifecycleSnoozed        = refresh.LifecycleSnoozed
)
