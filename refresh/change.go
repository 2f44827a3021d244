package refresh

import "time"

// NewEvent describes decision d, taken at now, with the state of m after it.
func NewEvent(m Model, d Decision, now time.Time) Event {
	return Event{
		At: now, ModelID: m.ID, Type: d.Event, Decision: d.Plan,
		Kind: d.Kind, Message: d.Message, Reason: d.Reason, Delay: d.Delay,
		AttemptNo: m.AttemptNo, AttemptUID: d.UID,
		RefreshAt: m.RefreshAt, DeadlineAt: m.DeadlineAt, Disabled: m.Disabled(),
	}
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
	a := &Attempt{ModelID: before.ID, UID: d.UID, AttemptNo: before.AttemptNo, StartedAt: before.StartedAt, DeadlineAt: before.DeadlineAt, FinishedAt: now}
	switch d.Event {
	case EventSuccess:
		a.Outcome = EventSuccess
	case EventFailure, EventTimeout:
		a.Outcome, a.ErrorKind, a.ErrorMessage, a.Decision, a.Delay = d.Event, d.Kind, d.Message, d.Plan, d.Delay
	case EventTrigger:
		a.Outcome = AttemptSuperseded
	case EventCancel:
		a.Outcome = AttemptCancelled
	default:
		return nil
	}
	return a
}

// changes collects the writes and events of transitions applied to a batch
// of models, keeping one Change per model (the last state wins).
type changes struct {
	index  map[string]int
	list   []Change
	events []Event
}

// add records the transition of before into after by d at now. A decision
// with no event records nothing.
func (c *changes) add(before, after Model, d Decision, now time.Time) {
	if d.Event == "" {
		return
	}
	c.events = append(c.events, NewEvent(after, d, now))
	if d.Event == EventStale {
		return
	}
	ch := Change{Model: after, Decision: d, Attempt: historyRow(before, after, d, now)}
	if c.index == nil {
		c.index = map[string]int{}
	}
	if i, ok := c.index[after.ID]; ok {
		if ch.Attempt == nil {
			ch.Attempt = c.list[i].Attempt
		}
		c.list[i] = ch
		return
	}
	c.index[after.ID] = len(c.list)
	c.list = append(c.list, ch)
}
