package refresh

import "time"

// This file holds DESIGN.md section 3's actions: Trigger, Enable, Pause,
// Resume, Cancel and Delete, asked for through the API or the simulator.

// Trigger asks for a refresh now ("the model changed"): disabled state,
// counters and streak are cleared, a running attempt is superseded (its
// outcome becomes stale, its status_message is cleared), and refresh_at =
// now. A paused model stays paused and starts when resumed; the decision
// says so. Trigger always changes the model.
func Trigger(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventTrigger, Rule: "trigger", Why: "refresh requested"}
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
		d.Why += "; running attempt " + m.AttemptUID + " superseded"
	}
	m.idle()
	m.clearStreak()
	m.RefreshAt = now
	if m.Paused {
		d.Why += "; the model stays paused and starts when resumed"
	}
	return m, d
}

// Enable re-enables a disabled model: counters and streak are cleared and
// the next run is next(now). On a model that is not disabled it changes
// nothing and sets Decision.Unchanged.
func Enable(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventEnable, Rule: "enable"}
	if !m.Disabled() {
		d.Why, d.Unchanged = "not disabled: nothing changes", true
		return m, d
	}
	m.clearStreak()
	m.RefreshAt = m.nextOrZero(now)
	d.Why = "enabled; next run " + ts(m.RefreshAt)
	return m, d
}

// Pause stops new starts; a running attempt still finishes and its outcome
// still applies. On a paused model it changes nothing and sets
// Decision.Unchanged.
func Pause(m Model) (Model, Decision) {
	if m.Paused {
		return m, Decision{Event: EventPause, Rule: "pause", Why: "already paused: nothing changes", Unchanged: true}
	}
	m.Paused = true
	return m, Decision{Event: EventPause, Rule: "pause", Why: "no new attempt starts until resumed"}
}

// Resume lifts a pause. An overdue refresh_at is due at once: missed
// occurrences coalesce into one run. On a model that is not paused it
// changes nothing and sets Decision.Unchanged.
func Resume(m Model, now time.Time) (Model, Decision) {
	if !m.Paused {
		return m, Decision{Event: EventResume, Rule: "resume", Why: "not paused: nothing changes", Unchanged: true}
	}
	m.Paused = false
	d := Decision{Event: EventResume, Rule: "resume", Why: "resumed; next look at " + ts(m.RefreshAt)}
	if !m.RefreshAt.IsZero() && !m.RefreshAt.After(now) && !m.Running() {
		d.Why = "resumed; overdue run " + ts(m.RefreshAt) + " starts now"
	}
	return m, d
}

// Cancel drops the running attempt (its outcome becomes stale, its
// status_message is cleared) and any pending retry: attempt_no = 0,
// refresh_at = next(now). It is not a failure. A disabled model has
// nothing to cancel, nor has a model with nothing running and nothing
// pending (idle, attempt_no 0, next run already next(now)): for them
// Decision.Unchanged is set and the model is returned as it was.
func Cancel(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventCancel, Rule: "cancel"}
	if m.Disabled() {
		d.Why, d.Unchanged = "disabled: nothing to cancel", true
		return m, d
	}
	next := m.nextOrZero(now)
	if !m.Running() && m.AttemptNo == 0 && m.RefreshAt.Equal(next) {
		d.Why, d.Unchanged = "nothing running or pending: nothing changes", true
		return m, d
	}
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
	}
	m.idle()
	m.AttemptNo = 0
	m.RefreshAt = next
	d.Why = "cancelled; next run " + ts(m.RefreshAt)
	return m, d
}

// Delete removes the model; a running attempt is over (its outcome becomes
// stale, and its worker is told).
func Delete(m Model) (Model, Decision) {
	d := Decision{Event: EventDelete, Rule: "delete", Why: "deleted"}
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
		d.Why += "; running attempt " + m.AttemptUID + " is over"
	}
	return m, d
}
