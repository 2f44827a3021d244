package refresh

import (
	"fmt"
	"time"
)

// This file holds the concurrency limits of docs/policy.md, as far as
// one model sees them. Limits (max_running per queue and per id prefix)
// live in the store; the scheduler counts the current attempts (models
// with attempt_uid set) that each limit matching a due model covers, and
// tells Tick which one is full (TickInput.FullLimit). A due model over a
// limit stays due with waiting_for_slot set: it is not started and is not
// an attempt. Slots go by refresh_at, then id.

// WaitForSlot records that the start due at now waits for a slot of the
// full concurrency limit l: waiting_for_slot = true and waiting_limit =
// l.Name(), nothing else changes, and the model stays due. The decision, a
// wait event whose Reason is l (e.g. `queue "exports" (max_running 5)`), is
// made once per wait and limit: it changes nothing (Decision.Event "")
// when the model already waits for l or no start is due, and is made
// again when the model, offered a slot of the limit it waited for, finds
// another limit full. Start, Skip, Pause, Cancel and Edit (when the plan
// is no longer due) end the wait.
func WaitForSlot(m Model, l Limit, now time.Time) (Model, Decision) {
	if (m.WaitingForSlot && m.WaitingLimit == l.Name()) || !m.CanStart(now) {
		return m, Decision{}
	}
	m.WaitingForSlot, m.WaitingLimit = true, l.Name()
	limit := l.String()
	return m, Decision{
		Event: EventWait, Rule: "slot.wait", AttemptNo: m.AttemptNo, Reason: limit,
		Why: "due since " + ts(m.RefreshAt) + ", but " + limit + " has no free slot: the start waits",
	}
}

// endWait ends the model's wait for a slot, if any.
func (m *Model) endWait() {
	m.WaitingForSlot, m.WaitingLimit = false, ""
}

// Kinds of concurrency limit (Limit.Kind).
const (
	// LimitQueue covers the models of one queue (Key is the queue name).
	LimitQueue = "queue"
	// LimitPrefix covers the models whose id starts with Key.
	LimitPrefix = "prefix"
)

// MaxLimitKeyBytes bounds the key of a limit.
const MaxLimitKeyBytes = 200

// Limit is a concurrency limit (docs/policy.md): at most MaxRunning
// current attempts among the models it covers. A MaxRunning of 0 starts
// none of them.
type Limit struct {
	Kind       string `json:"kind"`
	Key        string `json:"key"`
	MaxRunning int    `json:"max_running"`
}

// Covers reports whether the limit covers model m.
func (l Limit) Covers(m Model) bool {
	switch l.Kind {
	case LimitQueue:
		return m.Queue == l.Key
	case LimitPrefix:
		return len(m.ID) >= len(l.Key) && m.ID[:len(l.Key)] == l.Key
	}
	return false
}

// Name names the limit as kind:key, e.g. "prefix:acme-", as serve's
// --max-running flag and a model's waiting_limit do.
func (l Limit) Name() string { return l.Kind + ":" + l.Key }

// String names the limit as a wait event's reason does, e.g. `queue
// "exports" (max_running 5)`.
func (l Limit) String() string {
	return fmt.Sprintf("%s %q (max_running %d)", l.Kind, l.Key, l.MaxRunning)
}

// CheckLimit returns a *ValidationError naming each broken rule of l
// (kind: queue or prefix; key: a queue name for a queue, a non-empty id
// prefix for a prefix; max_running: >= 0), or nil.
func CheckLimit(l Limit) error {
	var errs errorList
	switch l.Kind {
	case LimitQueue:
		if !ValidQueue(l.Key) {
			errs.add("key", "%s, got %s", QueueRule, quoteShort(l.Key))
		}
	case LimitPrefix:
		if l.Key == "" || len(l.Key) > MaxLimitKeyBytes || !ValidID(l.Key) {
			errs.add("key", "must be the start of a model id: %s, got %s", IDRule, quoteShort(l.Key))
		}
	default:
		errs.add("kind", "must be %q or %q, got %s", LimitQueue, LimitPrefix, quoteShort(l.Kind))
	}
	if l.MaxRunning < 1 {
		errs.add("max_running", "must be >= 1 (to start none of the models, pause them), got %d", l.MaxRunning)
	}
	return errs.err()
}
