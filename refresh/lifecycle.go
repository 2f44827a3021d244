package refresh

import (
	"errors"
	"fmt"
	"strings"
)

// Lifecycle names: how the events stream names its entries and webhooks
// name their events. Most events keep their type (create, update, status,
// trigger, pause, resume, cancel, stale, debounce, wait, wait_too_long,
// freshness_lost, freshness_restored); the others are named for what happened to the
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
	EventDebounce, EventWait, EventWaitTooLong, EventFreshnessLost, EventFreshnessRestored,
}

// Lifecycle returns the lifecycle names of e, one entry of the events
// stream (and one webhook event) each. A failure or timeout has two:
// failed, then retry_scheduled (decision retry, retry_aligned or
// wait_next) or disabled (decision disable); a success that ends a streak
// of failures also has two: succeeded, then recovered.
func (e Event) Lifecycle() []string {
	first, second := e.lifecycle()
	if second == "" {
		return []string{first}
	}
	return []string{first, second}
}

// lifecycle returns the names of Lifecycle without allocating: the second
// is "" when e has one.
func (e Event) lifecycle() (first, second string) {
	switch e.Type {
	case EventStart:
		return LifecycleStarted, ""
	case EventSuccess:
		if e.Recovered {
			return LifecycleSucceeded, LifecycleRecovered
		}
		return LifecycleSucceeded, ""
	case EventEnable:
		return LifecycleEnabled, ""
	case EventDelete:
		return LifecycleDeleted, ""
	case EventSkip:
		return LifecycleSkipped, ""
	case EventSnooze:
		return LifecycleSnoozed, ""
	case EventFailure, EventTimeout:
		switch e.Decision {
		case DecisionDisable:
			return LifecycleFailed, LifecycleDisabled
		case DecisionRetry, DecisionRetryAligned, DecisionWaitNext:
			return LifecycleFailed, LifecycleRetryScheduled
		}
		return LifecycleFailed, ""
	}
	return e.Type, ""
}

// EventNames is a set of lifecycle names (LifecycleNames): the names that
// someone subscribes to, the events stream (serve's --events) or a webhook.
// Its zero value holds every name. A name that is not a lifecycle name is
// in every set.
type EventNames struct {
	off uint64 // bit i: LifecycleNames[i] is not in the set
}

// lifecycleIndex is the index of each name in LifecycleNames.
var lifecycleIndex = func() map[string]int {
	m := make(map[string]int, len(LifecycleNames))
	for i, n := range LifecycleNames {
		m[n] = i
	}
	return m
}()

// NoEventNames returns the set that holds no lifecycle name.
func NoEventNames() EventNames { return EventNames{off: 1<<len(LifecycleNames) - 1} }

// ParseEventNames reads the set s describes: "all", "none", lifecycle
// names separated by commas ("failed,disabled"), or names each after a '-'
// ("-started,-succeeded": every name but those). Its error states the rule
// broken, for the caller to prefix with the field.
func ParseEventNames(s string) (EventNames, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return EventNames{}, nil
	case "none":
		return NoEventNames(), nil
	case "":
		return EventNames{}, errors.New(`must be all, none, or lifecycle names separated by commas, got ""`)
	}
	items := strings.Split(s, ",")
	but := strings.HasPrefix(strings.TrimSpace(items[0]), "-")
	n := NoEventNames()
	if but {
		n = EventNames{}
	}
	for _, item := range items {
		name := strings.TrimSpace(item)
		if strings.HasPrefix(name, "-") != but {
			return EventNames{}, fmt.Errorf("must not mix names and -names (every name but some), got %q", s)
		}
		name = strings.TrimPrefix(name, "-")
		i, ok := lifecycleIndex[name]
		if !ok {
			return EventNames{}, fmt.Errorf("must be all, none, or names separated by commas, each one of %s, got %q",
				strings.Join(LifecycleNames, ", "), strings.TrimSpace(item))
		}
		if but {
			n.off |= 1 << i
		} else {
			n.off &^= 1 << i
		}
	}
	return n, nil
}

// With returns n with names added.
func (n EventNames) With(names ...string) EventNames {
	for _, name := range names {
		if i, ok := lifecycleIndex[name]; ok {
			n.off &^= 1 << i
		}
	}
	return n
}

// Has reports whether name is in n.
func (n EventNames) Has(name string) bool {
	if n.off == 0 {
		return true
	}
	i, ok := lifecycleIndex[name]
	return !ok || n.off&(1<<i) == 0
}

// String returns n as ParseEventNames reads it: "all", "none", or its
// names in the order of LifecycleNames.
func (n EventNames) String() string {
	switch n {
	case EventNames{}:
		return "all"
	case NoEventNames():
		return "none"
	}
	var names []string
	for _, name := range LifecycleNames {
		if n.Has(name) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

// Wants reports whether one of the lifecycle names of e is in n.
func (n EventNames) Wants(e Event) bool {
	if n.off == 0 {
		return true
	}
	first, second := e.lifecycle()
	return n.Has(first) || second != "" && n.Has(second)
}

// Keeps reports whether a store writes e to the outbox when the names in n
// are subscribed: one of its names is, or the Publisher revokes its
// attempt (EventRevocation). A success that changes data and that n does
// not want (Propagates) is written only if its model has dependents, which
// the store knows.
func (n EventNames) Keeps(e Event) bool {
	if n.Wants(e) {
		return true
	}
	_, revokes := EventRevocation(e)
	return revokes
}

// Propagates reports whether e brings upstream triggers to the dependents
// of its model (Service.Propagate): a success that changed the data.
func (e Event) Propagates() bool { return e.Type == EventSuccess && !e.Unchanged }
