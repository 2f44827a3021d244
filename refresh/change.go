package refresh

import (
	"slices"
	"sync"
	"time"
)

// NewEvent describes decision d, taken at now, with the state of m after it.
// The event's time is d.At when set (an outcome's arrival), else now.
// d.Also is not described: see NewEvents.
func NewEvent(m Model, d Decision, now time.Time) Event {
	at := now
	if !d.At.IsZero() {
		at = d.At
	}
	return Event{
		At: at.UTC(), ModelID: m.ID, Type: d.Event, Decision: d.Plan,
		Kind: d.Kind, Message: d.Message, Reason: d.Reason, Delay: d.Delay,
		AttemptNo: m.AttemptNo, AttemptUID: d.UID, AttemptDeadlineAt: utc(d.Deadline),
		RefreshAt: utc(m.RefreshAt), DeadlineAt: utc(m.DeadlineAt), Disabled: m.Disabled(),
		Cause: d.Cause, Upstream: d.Upstream, Unchanged: d.DataUnchanged, Until: utc(d.Until),
		OverdueSince: utc(d.OverdueSince), OverdueFor: d.OverdueFor, State: d.Phase, Missed: d.Missed,
		DebounceAt: utc(m.DebounceAt), WaitingForSlot: m.WaitingForSlot, Recovered: d.Recovered,
	}
}

// NewEvents returns the events decision d publishes, in order: its own
// and, if set, that of d.Also (a freshness_restored after its success),
// both with the state of m after the transition. It returns none for a
// decision with no event or one that changed nothing.
func NewEvents(m Model, d Decision, now time.Time) []Event {
	return appendEvents(nil, m, d, now)
}

// appendEvents appends the events of NewEvents to events.
func appendEvents(events []Event, m Model, d Decision, now time.Time) []Event {
	if d.Event == "" || d.Unchanged {
		return events
	}
	events = append(events, NewEvent(m, d, now))
	if d.Also != nil && d.Also.Event != "" {
		events = append(events, NewEvent(m, *d.Also, now))
	}
	return events
}

// FreshnessKey returns the webhook idempotency key of a freshness event,
// "{model_id}:{event}:{overdue_since}" with overdue_since in RFC 3339 (UTC,
// to the nanosecond if it has any), e.g.
// "bigtable-1:freshness_lost:2026-03-02T07:00:00Z", and "" for any other
// event. The freshness_lost and the freshness_restored of one episode
// carry the same overdue_since, and no other episode of the model does.
func (e Event) FreshnessKey() string {
	if e.Type != EventFreshnessLost && e.Type != EventFreshnessRestored {
		return ""
	}
	return e.ModelID + ":" + e.Type + ":" + e.OverdueSince.UTC().Format(time.RFC3339Nano)
}

// EventRevocation returns the notice that event e ended its attempt
// without an outcome, and false if it did not: a trigger or a debounce
// that superseded a running attempt (RevokedSuperseded), a cancel
// (RevokedCancelled), a delete (RevokedDeleted). The Publisher revokes
// these attempts after it publishes the events.
func EventRevocation(e Event) (Revocation, bool) {
	if e.AttemptUID == "" {
		return Revocation{}, false
	}
	var reason string
	switch e.Type {
	case EventTrigger, EventDebounce:
		reason = RevokedSuperseded
	case EventCancel:
		reason = RevokedCancelled
	case EventDelete:
		reason = RevokedDeleted
	default:
		return Revocation{}, false
	}
	return Revocation{ModelID: e.ModelID, AttemptUID: e.AttemptUID, Reason: reason, DeadlineAt: e.AttemptDeadlineAt}, true
}

// utc returns t in UTC, and the zero time as it is.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// Attempt outcomes recorded in the history besides success, failure and
// timeout.
const (
	AttemptSuperseded = "superseded"
	AttemptCancelled  = "cancelled"
	// AttemptSnoozed: the attempt ended with a snooze.
	AttemptSnoozed = "snoozed"
	// AttemptUnchanged: the attempt succeeded and said the data did not
	// change.
	AttemptUnchanged = "unchanged"
)

// historyRow returns the history row decision d touches, if any: a start
// inserts one, the end of an attempt (outcome, timeout, supersession by a
// trigger or a debounce, cancellation, snooze) completes it. before is the
// model before the transition, after the model after it. Events that
// concern no attempt (skip, wait, freshness, a debounced trigger that
// supersedes nothing yet) touch no row.
func historyRow(before, after Model, d Decision, now time.Time) *Attempt {
	if d.UID == "" {
		return nil
	}
	if d.Event == EventStart {
		return &Attempt{ModelID: after.ID, UID: d.UID, AttemptNo: after.AttemptNo, StartedAt: after.StartedAt, DeadlineAt: after.DeadlineAt}
	}
	end := now
	if !d.At.IsZero() {
		end = d.At
	}
	a := &Attempt{ModelID: before.ID, UID: d.UID, AttemptNo: before.AttemptNo, StartedAt: before.StartedAt, DeadlineAt: before.DeadlineAt, FinishedAt: end}
	switch d.Event {
	case EventSuccess:
		a.Outcome = EventSuccess
		if d.DataUnchanged {
			a.Outcome = AttemptUnchanged
		}
	case EventFailure, EventTimeout:
		a.Outcome, a.ErrorKind, a.ErrorMessage, a.Decision, a.Delay = d.Event, d.Kind, d.Message, d.Plan, d.Delay
	case EventSnooze:
		a.Outcome = AttemptSnoozed
	case EventTrigger, EventDebounce:
		a.Outcome = AttemptSuperseded
	case EventCancel:
		a.Outcome = AttemptCancelled
	case EventDelete:
		return nil // the history goes with the model
	default:
		return nil
	}
	return a
}

// changes collects the writes and events of transitions applied to a batch
// of models, keeping one Change per model (the last state wins).
type changes struct {
	index map[string]int
	Batch
}

// changesPool holds changes a pass is done with, for the next pass: a
// pass's changes take about a kilobyte a model.
var changesPool = sync.Pool{New: func() any { return &changes{index: map[string]int{}} }}

// getChanges returns empty changes with room for about n models. Give them
// back with putChanges once their batch is written and its events used.
func getChanges(n int) *changes {
	c := changesPool.Get().(*changes)
	c.Changes = slices.Grow(c.Changes[:0], n)
	c.Events = slices.Grow(c.Events[:0], n)
	c.Audit, c.Starts = nil, nil
	c.BeforeCommitFunc, c.HookBeforeWrite = nil, false
	return c
}

// putChanges gives c back for reuse; nothing may use it afterwards.
func putChanges(c *changes) {
	if c == nil {
		return
	}
	clear(c.index)
	c.Changes, c.Events, c.Audit, c.BeforeCommitFunc = c.Changes[:0], c.Events[:0], nil, nil
	changesPool.Put(c)
}

// add records the transition of before into after by d at now. A decision
// with no event, or one that changed nothing, records nothing.
func (c *changes) add(before, after Model, d Decision, now time.Time) {
	if d.Event == "" || d.Unchanged {
		return
	}
	c.Events = appendEvents(c.Events, after, d, now)
	if d.Event == EventStale {
		return
	}
	c.put(Change{Model: after, Decision: d, Attempt: historyRow(before, after, d, now)})
}

// put records ch, replacing an earlier change of the same model but keeping
// its history row when ch has none. When both touch a history row, of two
// attempts (a timeout, then the start of its retry, in one tick), ch is
// added after it instead: the store writes both rows and the model of the
// last change.
func (c *changes) put(ch Change) {
	if c.index == nil {
		c.index = map[string]int{}
	}
	if i, ok := c.index[ch.Model.ID]; ok {
		prev := c.Changes[i].Attempt
		switch {
		case ch.Attempt == nil:
			ch.Attempt = prev
		case prev != nil && prev.UID != ch.Attempt.UID:
			c.index[ch.Model.ID] = len(c.Changes)
			c.Changes = append(c.Changes, ch)
			return
		}
		c.Changes[i] = ch
		return
	}
	c.index[ch.Model.ID] = len(c.Changes)
	c.Changes = append(c.Changes, ch)
}
