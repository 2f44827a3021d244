package refresh

import (
	"fmt"
	"time"
)

// This file holds the freshness promise of docs/policy.md. A policy
// with max_age promises that the data is never older than max_age: the
// model becomes overdue at exactly (last_success_at ?? created_at) +
// max_age. The scheduler wakes at that instant (DueAt) and Tick publishes
// one freshness_lost with the model's state; the next success publishes
// freshness_restored with the length of the episode. overdue_since marks
// the open episode, so nothing repeats while it lasts (a pause, an edit, a
// restart, a failover); an edit that makes the model no longer overdue
// closes it silently (Edit).

// The states of a model, as a freshness_lost reports them (and as a list
// filter may name them). When several hold, the first in this order wins.
const (
	PhaseDisabled       = "disabled"
	PhasePaused         = "paused"
	PhaseRunning        = "running"
	PhaseSnoozed        = "snoozed"
	PhaseRetrying       = "retrying"
	PhaseWaitingForSlot = "waiting_for_slot"
	PhaseScheduled      = "scheduled"
	// PhaseIdle: nothing is planned (an on-demand model, a finished
	// schedule). The list of docs/policy.md ends with scheduled; a model with no
	// plan is not scheduled, so it gets a name of its own, last.
	PhaseIdle = "idle"
)

// Phase returns the model's state by the precedence of docs/policy.md:
// disabled > paused > running > snoozed > retrying > waiting_for_slot >
// scheduled, then idle. Snoozed means that the round has snoozed
// (snoozed_since is set, until a success, a wait_next, a trigger, an
// enable or a cancel), even if an attempt failed since; retrying means a
// failure streak (consecutive_failures > 0); scheduled means that a run is
// planned (refresh_at or debounce_at).
func (s State) Phase() string {
	switch {
	case s.Disabled():
		return PhaseDisabled
	case s.Paused:
		return PhasePaused
	case s.Running():
		return PhaseRunning
	case !s.SnoozedSince.IsZero():
		return PhaseSnoozed
	case s.ConsecutiveFailures > 0:
		return PhaseRetrying
	case s.WaitingForSlot:
		return PhaseWaitingForSlot
	case !s.RefreshAt.IsZero() || !s.DebounceAt.IsZero():
		return PhaseScheduled
	}
	return PhaseIdle
}

// OverdueAt returns the instant the model becomes overdue,
// (last_success_at ?? created_at) + max_age, and false if the policy has
// no max_age.
func (m Model) OverdueAt() (time.Time, bool) {
	if m.Policy.MaxAge <= 0 {
		return time.Time{}, false
	}
	base := m.LastSuccessAt
	if base.IsZero() {
		base = m.CreatedAt
	}
	if base.IsZero() {
		return time.Time{}, false
	}
	return base.Add(time.Duration(m.Policy.MaxAge)), true
}

// Overdue reports whether the model is overdue at now: its episode is open
// (overdue_since is set), or its overdue instant has come and the
// scheduler has not yet opened the episode.
func (m Model) Overdue(now time.Time) bool {
	if !m.OverdueSince.IsZero() {
		return true
	}
	at, ok := m.OverdueAt()
	return ok && !at.After(now)
}

// LoseFreshness opens the freshness episode once the overdue instant has
// come (the scheduler's tick at or after it): overdue_since = that
// instant, and the decision freshness_lost carries it and the model's
// state (Phase). It changes nothing (Decision.Event "") without max_age,
// before the instant, or while an episode is open: freshness_lost is
// published once per episode.
func LoseFreshness(m Model, now time.Time) (Model, Decision) {
	at, ok := m.OverdueAt()
	if !ok || at.After(now) || !m.OverdueSince.IsZero() {
		return m, Decision{}
	}
	m.OverdueSince = at
	since := "its last success at " + ts(m.LastSuccessAt)
	if m.LastSuccessAt.IsZero() {
		since = "its creation at " + ts(m.CreatedAt) + " (it never succeeded)"
	}
	phase := m.Phase()
	return m, Decision{
		Event: EventFreshnessLost, Rule: "freshness.lost", OverdueSince: at, Phase: phase,
		Why: fmt.Sprintf("max_age %s after %s: overdue since %s, while %s", m.Policy.MaxAge, since, ts(at), phase),
	}
}

// FreshnessRestored ends the open freshness episode at at, the time of a
// success (an unchanged one too: the data is known current):
// overdue_since is cleared and the decision freshness_restored carries it
// and the episode's length, at - overdue_since (0 if the success arrived
// before the instant). It changes nothing (Decision.Event "") when no
// episode is open. Success calls it; its decision is the success's
// Decision.Also.
func FreshnessRestored(m Model, at time.Time) (Model, Decision) {
	since := m.OverdueSince
	if since.IsZero() {
		return m, Decision{}
	}
	m.OverdueSince = time.Time{}
	length := max(at.Sub(since), 0)
	return m, Decision{
		Event: EventFreshnessRestored, Rule: "freshness.restored", OverdueSince: since, OverdueFor: length,
		Why: fmt.Sprintf("fresh again after being overdue for %s since %s", Duration(length), ts(since)),
	}
}
