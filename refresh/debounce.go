package refresh

import (
	"fmt"
	"time"
)

// This file holds the debounced triggers of docs/policy.md. With
// trigger_debounce {quiet, max_wait}, every trigger (API, upstream, bulk)
// publishes trigger but does not take effect at once: the first one with
// no window open sets debounce_since (t0) = now, and each one sets
// debounce_at = min(now + quiet, t0 + max_wait). When debounce_at <= now,
// the scheduler's tick applies the trigger as in section 3 (it clears the
// disabled state and counters, supersedes the running attempt, plans a
// start now) and the window closes. refresh_at keeps its meaning; an
// outcome of the running attempt meanwhile is applied normally and leaves
// debounce_at in place. Cancel closes the window; a paused model's start
// waits for resume.

// DebounceTrigger gathers a trigger with cause (see TriggerFrom) into the
// debounce window: it opens one (debounce_since = now) if none is open,
// and sets debounce_at = min(now + quiet, debounce_since + max_wait).
// Nothing else changes: a running attempt goes on, refresh_at stays. The
// decision is a trigger event (rule "trigger.debounce"), which is
// published. The window remembers whether an API or bulk trigger is in it
// (debounce_cause): one with upstream triggers only leaves a disabled
// model disabled when it takes effect. Without trigger_debounce it is
// TriggerFrom.
func DebounceTrigger(m Model, cause string, now time.Time) (Model, Decision) {
	if !m.Policy.Debounced() {
		return TriggerFrom(m, cause, now)
	}
	db := m.Policy.TriggerDebounce
	d := Decision{Event: EventTrigger, Rule: "trigger.debounce", Cause: cause}
	opened := m.DebounceAt.IsZero()
	switch {
	case opened:
		m.DebounceSince = now
		m.DebounceCause = ""
		if cause == CauseUpstream {
			m.DebounceCause = CauseUpstream
		}
	case cause != CauseUpstream:
		m.DebounceCause = ""
	}
	quiet, limit := now.Add(time.Duration(db.Quiet)), m.DebounceSince.Add(time.Duration(db.MaxWait))
	m.DebounceAt = quiet
	by := fmt.Sprintf("quiet %s after this trigger", db.Quiet)
	if limit.Before(quiet) {
		m.DebounceAt = limit
		by = fmt.Sprintf("max_wait %s after the window's first trigger at %s", db.MaxWait, ts(m.DebounceSince))
	}
	verb := "joins the window open since " + ts(m.DebounceSince)
	if opened {
		verb = "opens a debounce window"
	}
	d.Why = fmt.Sprintf("refresh requested; it %s and takes effect at %s, %s", verb, ts(m.DebounceAt), by)
	if m.Paused {
		d.Why += "; the model is paused and starts when resumed"
	}
	return m, d
}

// ApplyDebounce applies the triggers of the debounce window once
// debounce_at <= now (the scheduler's tick): as a trigger of section 3 at
// now, and the window closes. The decision is a debounce event; when it
// supersedes a running attempt, it names it (UID, Deadline) and the
// attempt's worker is told, as for a trigger. A window of upstream
// triggers only (debounce_cause upstream) on a disabled model closes and
// changes nothing else. It changes nothing (Decision.Event "") when no
// window is due.
func ApplyDebounce(m Model, now time.Time) (Model, Decision) {
	if m.DebounceAt.IsZero() || m.DebounceAt.After(now) {
		return m, Decision{}
	}
	d := Decision{Event: EventDebounce, Rule: "debounce", Cause: m.DebounceCause}
	window := fmt.Sprintf("the triggers gathered since %s", ts(m.DebounceSince))
	if m.DebounceCause == CauseUpstream && m.Disabled() {
		m.closeDebounce()
		d.Why = window + " came from upstreams only: the disabled model stays disabled"
		return m, d
	}
	d.Why = window + " take effect"
	if m.Running() {
		d.Why += "; running attempt " + m.AttemptUID + " superseded"
	}
	m.triggered(now, &d)
	if m.Paused {
		d.Why += "; the model stays paused and starts when resumed"
	}
	return m, d
}
