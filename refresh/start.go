package refresh

import (
	"fmt"
	"time"
)

// This file holds docs/transitions.md's Create, Start and Timeout: how a
// model gets its first plan, how a due model starts an attempt, and how an
// attempt that reached its deadline ends.

// Create gives a new model its first plan: refresh_at = now when trigger is
// set, else first(now), else null. m carries id, queue, payload and policy;
// its CreatedAt is set to now if zero and its state is reset.
func Create(m Model, trigger bool, now time.Time) (Model, Decision) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.State = State{}
	d := Decision{Event: EventCreate, Rule: "create"}
	switch first, ok := m.First(now); {
	case trigger:
		m.RefreshAt = now
		d.Why = "created with trigger: refresh now"
	case ok:
		m.RefreshAt = first
		d.Why = "first scheduled occurrence at " + ts(first)
	default:
		d.Why = "no schedule and no trigger: nothing planned"
	}
	return m, d
}

// CanStart reports whether Start applies at now: refresh_at <= now, idle,
// not paused, not disabled.
func (m Model) CanStart(now time.Time) bool {
	return !m.RefreshAt.IsZero() && !m.RefreshAt.After(now) && !m.Running() && !m.Paused && !m.Disabled()
}

// Start starts attempt uid: attempt_no += 1, deadline_at = refresh_at =
// now + timeout, status_message cleared (and waiting_for_slot). It changes
// nothing (Decision.Event "") unless CanStart. It judges neither the
// catch-up window nor the concurrency limits: the scheduler calls Tick,
// which does.
func Start(m Model, uid string, now time.Time) (Model, Decision) {
	if !m.CanStart(now) {
		return m, Decision{}
	}
	timeout := time.Duration(m.Policy.Timeout)
	m.AttemptNo++
	m.AttemptUID = uid
	m.StartedAt = now
	m.DeadlineAt = now.Add(timeout)
	m.RefreshAt = m.DeadlineAt
	m.StatusMessage = ""
	m.endWait()
	m.OffSchedule = false
	return m, Decision{
		Event: EventStart, Rule: "start", UID: uid, AttemptNo: m.AttemptNo,
		Why: fmt.Sprintf("attempt %d starts, deadline %s", m.AttemptNo, ts(m.DeadlineAt)),
	}
}

// TimedOut reports whether the running attempt has reached its deadline.
func (m Model) TimedOut(now time.Time) bool {
	return m.Running() && !m.DeadlineAt.After(now)
}

// Timeout fails the running attempt with kind "timeout" once its deadline
// has passed; it changes nothing otherwise. The failure's message names
// the attempt's own timeout (deadline_at - started_at), which an edit of
// the policy since its start does not change.
func Timeout(m Model, now time.Time) (Model, Decision) {
	if !m.TimedOut(now) {
		return m, Decision{}
	}
	f := Failure{
		Kind:      KindTimeout,
		Message:   fmt.Sprintf("attempt %d did not finish within %s", m.AttemptNo, Duration(m.DeadlineAt.Sub(m.StartedAt))),
		Retryable: true,
	}
	m, d := fail(m, f, now, now)
	d.Event = EventTimeout
	return m, d
}
