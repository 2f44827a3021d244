package refresh

import (
	"strings"
	"time"
)

// This file holds docs/transitions.md's actions: Trigger, Enable, Pause,
// Resume, Cancel and Delete, asked for through the API or the simulator;
// the causes of a trigger and how each action meets the state of section
// 6 (a debounce window, a snooze, a slot wait); and Update, a write of
// the definition, with Edit, what it does to the run state.

// Trigger asks for a refresh now ("the model changed"): disabled state,
// counters and streak are cleared, a running attempt is superseded (its
// outcome becomes stale, its status_message is cleared), and refresh_at =
// now. A paused model stays paused and starts when resumed; the decision
// says so. Trigger always changes the model.
//
// With trigger_debounce, the trigger opens or extends the debounce window
// instead and takes effect at debounce_at (DebounceTrigger). Trigger is
// TriggerFrom with no cause: an action of the API or of the simulator.
func Trigger(m Model, now time.Time) (Model, Decision) { return TriggerFrom(m, "", now) }

// TriggerFrom is Trigger with its cause, which the decision carries: ""
// (an API or simulator action, a write with trigger: true), CauseBulk (one
// model of a bulk action) or CauseUpstream (an upstream's success; call
// UpstreamTrigger, which decides whether the dependent's condition holds).
// An upstream trigger leaves a disabled model disabled: nothing changes
// and Decision.Unchanged is set. Every other trigger changes the model and
// publishes a trigger event, a debounced one too.
func TriggerFrom(m Model, cause string, now time.Time) (Model, Decision) {
	if cause == CauseUpstream && m.Disabled() {
		return m, Decision{Event: EventTrigger, Rule: "trigger", Cause: cause, Unchanged: true,
			Why: "disabled: an upstream trigger leaves it disabled (an enable, an API trigger or an update of its definition clears it)"}
	}
	if m.Policy.Debounced() {
		return DebounceTrigger(m, cause, now)
	}
	d := Decision{Event: EventTrigger, Rule: "trigger", Cause: cause, Why: "refresh requested"}
	if m.Running() {
		d.Why += "; running attempt " + m.AttemptUID + " superseded"
	}
	m.triggered(now, &d)
	if m.Paused {
		d.Why += "; the model stays paused and starts when resumed"
	}
	return m, d
}

// Enable re-enables a disabled model: counters, streak and snooze are
// cleared and the next run is next(now). On a model that is not disabled
// it changes nothing and sets Decision.Unchanged.
func Enable(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventEnable, Rule: "enable"}
	if !m.Disabled() {
		d.Why, d.Unchanged = "not disabled: nothing changes", true
		return m, d
	}
	m.clearStreak()
	m.SnoozedSince = time.Time{}
	m.planScheduled(m.nextOrZero(now))
	d.Why = "enabled; " + nextRunWhy(m.RefreshAt)
	return m, d
}

// Pause stops new starts; a running attempt still finishes and its outcome
// still applies. A model waiting for a slot stops waiting. On a paused
// model it changes nothing and sets Decision.Unchanged.
func Pause(m Model) (Model, Decision) {
	if m.Paused {
		return m, Decision{Event: EventPause, Rule: "pause", Why: "already paused: nothing changes", Unchanged: true}
	}
	m.Paused = true
	m.endWait()
	return m, Decision{Event: EventPause, Rule: "pause", Why: "no new attempt starts until resumed"}
}

// Resume lifts a pause. An overdue refresh_at is due at once: missed
// occurrences coalesce into one run (which the catch-up window may skip
// at the next tick). On a model that is not paused it changes nothing and
// sets Decision.Unchanged.
func Resume(m Model, now time.Time) (Model, Decision) {
	if !m.Paused {
		return m, Decision{Event: EventResume, Rule: "resume", Why: "not paused: nothing changes", Unchanged: true}
	}
	m.Paused = false
	d := Decision{Event: EventResume, Rule: "resume", Why: "resumed; " + nextRunWhy(m.RefreshAt)}
	if m.Running() { // refresh_at is the attempt's deadline
		d.Why = "resumed; the running attempt goes on, deadline " + ts(m.DeadlineAt)
	}
	if !m.RefreshAt.IsZero() && !m.RefreshAt.After(now) && !m.Running() {
		d.Why = "resumed; overdue run " + ts(m.RefreshAt) + " starts now"
	}
	return m, d
}

// Cancel drops the running attempt (its outcome becomes stale, its
// status_message is cleared) and any pending retry: attempt_no = 0,
// refresh_at = next(now). It is not a failure. It also closes an open
// debounce window, resets snoozed_since and ends a slot wait.
//
// A disabled model has nothing to cancel but an open debounce window,
// which closes (its effect would clear the disabled state); nor has a
// model with nothing running and nothing pending (idle, attempt_no 0, next
// run already next(now), no window, no snooze): for them Decision.Unchanged
// is set and the model is returned as it was.
func Cancel(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventCancel, Rule: "cancel"}
	window := !m.DebounceAt.IsZero()
	if m.Disabled() {
		if !window {
			d.Why, d.Unchanged = "disabled: nothing to cancel", true
			return m, d
		}
		m.closeDebounce()
		d.Why = "disabled: the debounced triggers are cancelled, and the model stays disabled"
		return m, d
	}
	next := m.nextOrZero(now)
	if !m.Running() && m.AttemptNo == 0 && m.RefreshAt.Equal(next) && !window && m.SnoozedSince.IsZero() && !m.WaitingForSlot {
		d.Why, d.Unchanged = "nothing running or pending: nothing changes", true
		return m, d
	}
	m.supersede(&d)
	m.AttemptNo = 0
	m.closeDebounce()
	m.SnoozedSince = time.Time{}
	m.endWait()
	m.planScheduled(next)
	d.Why = "cancelled; " + nextRunWhy(m.RefreshAt)
	if window {
		d.Why += "; the debounced triggers are cancelled"
	}
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

// Edit gives m the policy p at now, as a write of the definition (PUT or
// PATCH) without trigger does; the caller sets the other fields of the
// definition (queue, payload, upstreams) itself. It publishes no event:
// its Decision.Event is "" and Why says what the edit changed besides the
// policy, for logs. Update calls it for every write of an existing model.
//
//   - An idle model that is neither disabled nor in a round (attempt_no 0)
//     nor snoozed is planned at first(now) of the new policy (its schedule
//     and spread); a pending retry or snooze keeps its time.
//   - An open freshness episode closes silently if the model is no longer
//     overdue under p (max_age removed, or lengthened past now); an
//     episode that stays open keeps its overdue_since.
//   - A slot wait ends if the plan is no longer due; off_schedule goes
//     with max_lateness.
//   - An open debounce window stays open, and takes effect at its
//     debounce_at even if p has no trigger_debounce.
//
// The caller checks p first (ParsePolicy, and CheckAt when schedule,
// timezone or spread changes).
func Edit(m Model, p Policy, now time.Time) (Model, Decision) {
	m.Policy = p
	var why []string
	if !m.Running() && !m.Disabled() && m.AttemptNo == 0 && m.SnoozedSince.IsZero() {
		first, _ := m.First(now)
		if !first.Equal(m.RefreshAt) || m.OffSchedule {
			why = append(why, "next run "+ts(first))
		}
		m.planScheduled(first)
	}
	if m.WaitingForSlot && (m.RefreshAt.IsZero() || m.RefreshAt.After(now)) {
		m.endWait()
	}
	if p.MaxLateness <= 0 {
		m.OffSchedule = false
	}
	if !m.OverdueSince.IsZero() {
		if at, ok := m.OverdueAt(); !ok || at.After(now) {
			why = append(why, "no longer overdue: the freshness episode since "+ts(m.OverdueSince)+" closes silently")
			m.OverdueSince = time.Time{}
		}
	}
	d := Decision{Rule: "edit", Why: "definition written"}
	if len(why) > 0 {
		d.Why += "; " + strings.Join(why, "; ")
	}
	return m, d
}

// Update writes the definition def into m at now, as a PUT or PATCH of an
// existing model does, trigger being the write's "trigger": true.
//
//   - A write that changes the definition of a disabled model (any field
//     DefinitionChanges names: queue, payload, policy, upstreams,
//     rate_key) re-enables it: the customer replaced what was broken. It
//     takes effect as a trigger with no cause (TriggerFrom), so it clears
//     the disabled state, counters and streak and plans a start now, or,
//     when def's policy has trigger_debounce, joins the debounce window,
//     which clears them when it takes effect. The decision is an update
//     event (rule "update.disabled"), then the trigger's in Decision.Also;
//     trigger asks for nothing more.
//   - Otherwise the model keeps its run state (Edit), and with trigger is
//     triggered (Trigger), whose decision is returned; without trigger the
//     decision is Edit's, with no event, and a disabled model stays
//     disabled.
//
// The caller checks def first, as for Edit.
func Update(m Model, def Definition, trigger bool, now time.Time) (Model, Decision) {
	before := m
	m.Queue, m.Payload, m.Upstreams, m.UpstreamsMode, m.RateKey = def.Queue, def.Payload, def.Upstreams, def.UpstreamsMode, def.RateKey
	m, d := Edit(m, def.Policy, now)
	if before.Disabled() {
		if changes := DefinitionChanges(before, m); len(changes) > 0 {
			fields := make([]string, len(changes))
			for i, c := range changes {
				fields[i] = c.Field
			}
			var td Decision
			m, td = TriggerFrom(m, "", now)
			return m, Decision{Event: EventUpdate, Rule: "update.disabled", Also: &td,
				Why: "the definition of the disabled model changed (" + strings.Join(fields, ", ") + "): it is re-enabled by a trigger"}
		}
	}
	if trigger {
		return Trigger(m, now)
	}
	return m, d
}

// nextRunWhy says in a decision's Why when the model runs next after an
// action: "next run <RFC 3339 time>", or "nothing planned".
func nextRunWhy(t time.Time) string {
	if t.IsZero() {
		return "nothing planned"
	}
	return "next run " + ts(t)
}
