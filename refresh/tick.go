package refresh

import "time"

// This file holds what the scheduler applies to a due model: Tick, one
// step at a time in the order of docs/transitions.md, and DueAt, the instant the
// scheduler must look at a model.

// TickInput is what the scheduler knows from outside the model when it
// ticks it.
type TickInput struct {
	// UID is the uid a start would give its attempt (a fresh xid). Tick
	// uses it only for a start.
	UID string
	// FullLimit is a limit that matches the model and holds its start
	// back: a concurrency limit without a free slot, or a rate limit that
	// admits no start now; the zero Limit when every matching limit
	// admits the start, or none matches. A start it holds back waits
	// (WaitForSlot).
	FullLimit Limit
	// Until is, when FullLimit is a rate limit that admits no start now,
	// the instant it admits its next start (Limit.Admits); zero for a
	// concurrency limit.
	Until time.Time
	// Tenant is the model's tenant (Tenant), kept with a wait so that the
	// stores offer starts to the tenants in turn.
	Tenant string
}

// MaxTickSteps bounds the steps TickAll takes at one instant; Tick never
// needs more (a timeout, a debounce, a freshness_lost, then a skip, a
// wait and a wait_too_long, or a start).
const MaxTickSteps = 8

// Tick applies to m the first thing due at now, in the order of docs/transitions.md, and
// returns the model after it and its decision; Decision.Event "" means
// nothing is due. The scheduler calls it again with the model it returned
// until nothing is due (TickAll), writing each step's change and event;
// each call is one entry of a timeline. The order:
//
//  1. the timeout of the running attempt whose deadline has come
//     (Timeout);
//  2. the debounced triggers whose debounce_at has come (ApplyDebounce);
//  3. the freshness instant, if the episode is not open yet
//     (LoseFreshness), with the state the steps before left;
//  4. if a start is due (CanStart): its skip by the catch-up window
//     (Skip), else its wait when in.FullLimit is set (WaitForSlot, once
//     per wait, then WaitTooLong once the wait lasts longer than
//     max_lateness), else the start of attempt in.UID (Start).
func Tick(m Model, in TickInput, now time.Time) (Model, Decision) {
	if m.TimedOut(now) {
		return Timeout(m, now)
	}
	if after, d := ApplyDebounce(m, now); d.Event != "" {
		return after, d
	}
	if after, d := LoseFreshness(m, now); d.Event != "" {
		return after, d
	}
	if !m.CanStart(now) {
		return m, Decision{}
	}
	if after, d := Skip(m, now); d.Event != "" {
		return after, d
	}
	if in.FullLimit.Kind != "" {
		if after, d := WaitForSlot(m, in, now); d.Event != "" {
			return after, d
		}
		return WaitTooLong(m, in.FullLimit, now)
	}
	return Start(m, in.UID, now)
}

// Step is one transition of a sequence: its decision and the model after
// it.
type Step struct {
	Model    Model
	Decision Decision
}

// TickAll applies Tick to m until nothing more is due at now (at most
// MaxTickSteps times) and returns the steps, in order; none if nothing was
// due. At most one step is a start, of attempt in.UID. Each step's change
// and event are written as if Tick had been called alone: the model
// before step i is steps[i-1].Model (m for the first).
func TickAll(m Model, in TickInput, now time.Time) []Step {
	return appendTickAll(nil, m, in, now)
}

// appendTickAll is TickAll appending the steps to steps, so that the
// scheduler reuses one slice for a whole batch.
func appendTickAll(steps []Step, m Model, in TickInput, now time.Time) []Step {
	for range MaxTickSteps {
		after, d := Tick(m, in, now)
		if d.Event == "" {
			break
		}
		steps = append(steps, Step{Model: after, Decision: d})
		m = after
	}
	return steps
}

// DueAt returns the instant the scheduler must next look at m, or the
// zero time if nothing is planned: the earliest of
//
//   - refresh_at (a start, or the deadline of the running attempt),
//     unless the model is paused and idle (paused models still time out);
//   - debounce_at, when a debounce window is open (also while paused or
//     disabled: its effect comes at that time);
//   - the overdue instant (OverdueAt), while no freshness episode is open
//     (also while paused or disabled).
//
// A model is due when DueAt is set and <= now. The stores index it
// instead of refresh_at (ClaimDue claims models with DueAt <= now,
// NextDue returns the earliest), and recompute it at every write. A model
// waiting for a slot keeps a DueAt in the past: it stays due.
func (m Model) DueAt() time.Time {
	var due time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	if m.Running() || !m.Paused {
		consider(m.RefreshAt)
	}
	consider(m.DebounceAt)
	if m.OverdueSince.IsZero() {
		if at, ok := m.OverdueAt(); ok {
			consider(at)
		}
	}
	return due
}
