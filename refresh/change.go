package refresh

import (
	"slices"
	"sync"
	"time"
)

// NewEvent describes decision d, taken at now, with the state of m after it.
// The event's time is d.At when set (an outcome's arrival), else now.
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
	}
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
)

// historyRow returns the history row decision d touches, if any: a start
// inserts one, the end of an attempt (outcome, timeout, supersession,
// cancellation) completes it. before is the model before the transition,
// after the model after it.
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
	case EventFailure, EventTimeout:
		a.Outcome, a.ErrorKind, a.ErrorMessage, a.Decision, a.Delay = d.Event, d.Kind, d.Message, d.Plan, d.Delay
	case EventTrigger:
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
	c.BeforeCommitFunc = nil
	return c
}

// putChanges gives c back for reuse; nothing may use it afterwards.
func putChanges(c *changes) {
	if c == nil {
		return
	}
	clear(c.index)
	c.Changes, c.Events, c.BeforeCommitFunc = c.Changes[:0], c.Events[:0], nil
	changesPool.Put(c)
}

// add records the transition of before into after by d at now. A decision
// with no event, or one that changed nothing, records nothing.
func (c *changes) add(before, after Model, d Decision, now time.Time) {
	if d.Event == "" || d.Unchanged {
		return
	}
	c.Events = append(c.Events, NewEvent(after, d, now))
	if d.Event == EventStale {
		return
	}
	c.put(Change{Model: after, Decision: d, Attempt: historyRow(before, after, d, now)})
}

// put records ch, replacing an earlier change of the same model but keeping
// its history row when ch has none.
func (c *changes) put(ch Change) {
	if c.index == nil {
		c.index = map[string]int{}
	}
	if i, ok := c.index[ch.Model.ID]; ok {
		if ch.Attempt == nil {
			ch.Attempt = c.Changes[i].Attempt
		}
		c.Changes[i] = ch
		return
	}
	c.index[ch.Model.ID] = len(c.Changes)
	c.Changes = append(c.Changes, ch)
}
