// Package refresh is Freshen's domain: refresh policies, the state of a
// model, the pure transitions of docs/transitions.md and docs/policy.md, and the loops
// that apply them (the scheduler tick and the outcome consumer).
//
// It imports no infrastructure. The loops talk to the small Store, Queue and
// Outcomes interfaces declared here; refresh/memory, refresh/postgres and
// queue implement them. Time comes from one injected Clock.
//
// # Transitions
//
// Every transition is a pure function of (state, policy, event, now) that
// returns the model after it and a Decision: which event, which rule, why.
// transition.go lists the files, each one part of docs/transitions.md. A Decision
// with Event "" changed nothing; one with Unchanged set is a no-op action
// (nothing written, nothing published). Otherwise the caller records it
// with changes.add, which writes the model, the history row (historyRow)
// and the events (NewEvents: the decision's own and, for a success that
// ends a freshness episode, the freshness_restored of Decision.Also).
//
// # Extensions (docs/policy.md)
//
// Each extension is optional: a policy or model that does not use it has
// its zero values, omitted from JSON, and behaves as in section 3. Only
// last_changed_at is set for every model (every success but an unchanged
// one sets it).
//
//   - Upstreams (upstream.go). Model.Upstreams and Model.UpstreamsMode
//     ("all", the default, or "any"). UpstreamsReady is the condition,
//     UpstreamTrigger the trigger an upstream's success brings (cause
//     upstream; debounced if the dependent debounces; planned for resume
//     if paused; no change if disabled), UpstreamWaiting the sentence that
//     says what a dependent waits for. CheckUpstreams checks a write;
//     CheckUpstreamCycle finds the cycle a write would close; FindCycle
//     finds any cycle of a graph.
//   - Concurrency limits (slots.go). TickInput.FullLimit says that a
//     matching limit is full; the start waits (WaitForSlot:
//     waiting_for_slot, one wait event per wait) and the model stays due.
//   - Freshness promise (freshness.go). Policy.MaxAge; OverdueAt is the
//     instant, LoseFreshness opens the episode at it (freshness_lost with
//     State.Phase), a success closes it (FreshnessRestored, in
//     Decision.Also), an edit that makes the model no longer overdue
//     closes it silently (Edit). overdue_since marks the open episode, so
//     nothing repeats. Event.FreshnessKey is the webhook idempotency key.
//   - Debounced triggers (debounce.go). Policy.TriggerDebounce; Trigger
//     and TriggerFrom gather triggers into a window (DebounceTrigger:
//     debounce_since, debounce_at, debounce_cause), which ApplyDebounce
//     applies at debounce_at (a debounce event, which may supersede the
//     running attempt).
//   - Snooze outcome (snooze.go). Outcome type snooze with Until or For;
//     Policy.MaxSnooze (default 24h); snoozed_since.
//   - Unchanged success (outcome.go). Outcome.Unchanged on a success: a
//     success in every rule, but last_changed_at keeps its value.
//   - Spread (schedule.go). Policy.Spread shifts every occurrence by
//     Model.SpreadOffset; Next and First, and so every plan, use the
//     shifted times. CheckAt refuses a spread not below the schedule's
//     shortest gap.
//   - Catch-up window (catchup.go). Policy.MaxLateness; Skip skips a late
//     start planned at a scheduled occurrence (skip event with Missed).
//     off_schedule marks a trigger, retry delay or snooze time that falls
//     on an occurrence, which is never skipped.
//
// The scheduler applies all that is due with Tick, in the order of docs/transitions.md,
// and wakes at Model.DueAt.
//
// # What the callers do with them
//
// Stores. Persist every new field of Model and State (upstreams,
// upstreams_mode, last_changed_at, debounce_at, debounce_since,
// debounce_cause, overdue_since, snoozed_since, waiting_for_slot,
// off_schedule) and index Model.DueAt() instead of refresh_at, recomputed
// at every write of a model: ClaimDue claims models whose due_at <= now,
// ordered by due_at then id (so waiting models go by refresh_at, then id);
// NextDue returns the earliest due_at. DueAt already leaves out the
// refresh_at of a paused idle model. The list filters gain the state
// (State.Phase, or its SQL translation) and overdue (overdue_since set).
// A write of upstreams calls CheckUpstreamCycle in its transaction with
// the upstreams of the models reachable from the new ones. Stores also
// answer "the dependents of model id" (models whose upstreams contain id)
// and the counts of current attempts (attempt_uid set) per queue and per
// id prefix that the concurrency limits need, and keep the limits
// (max_running per queue and per id prefix).
//
// Scheduler. For each claimed model, replace the choice between Timeout
// and Start by TickAll(m, TickInput{UID: a fresh uid, FullLimit: ...},
// now), and record each step with changes.add(previous model, step.Model,
// step.Decision, now); push JobFor(step.Model) for a start step. FullLimit
// names the first matching limit whose current attempts (models other
// than this one with attempt_uid set, plus the starts of this pass) reach
// max_running; a start counts in the pass's tally. The model's own attempt,
// superseded by a debounce in the same TickAll, no longer counts: its
// slot passes to the new start. A model that waits stays due and a pass
// that claims only waiting models writes nothing: the loop must not spin
// on them (wake on a Wake call after an attempt ends, or sleep MaxSleep
// when a pass started nothing and claimed only waiting models). Call
// Wake when DueAt moves earlier (a create, a trigger, a resume, an edit,
// a debounce window).
//
// Consumer. ApplyOutcome as today; changes.add publishes the
// freshness_restored of Decision.Also. A success that changed the data
// (event success, Unchanged false) brings the upstream triggers: load the
// dependents of the model, the Upstream view (UpstreamOf, with the new
// last_changed_at) of each of their upstreams that exists, and call
// UpstreamTrigger(dependent, ups, model id, now) for each, recording the
// decisions like any other. Do it so that a crash loses none: in the
// transaction of the success, or from its committed event (the outbox)
// in a later one; a dependent busy in another transaction is retried.
//
// Queue. The outcome decoder reads until (RFC 3339), for (a Duration) and
// unchanged (a boolean), accepts the type snooze, and calls
// CheckOutcome(o, o.ArrivedAt) to dead-letter a malformed one with its
// field-named reason. Lifecycle names of the new events: skip is
// published as skipped, snooze as snoozed; the others (trigger, debounce,
// wait, freshness_lost, freshness_restored) under their own names.
//
// Publisher. Revoke the attempts EventRevocation returns (it adds the
// debounce that supersedes an attempt to trigger, cancel and delete).
// Webhooks key freshness events by Event.FreshnessKey.
//
// API. A write of the definition checks upstreams and upstreams_mode with
// CheckUpstreams (the token's id prefix bounds the upstreams a write may
// name), calls CheckAt when schedule, timezone or spread changes, applies
// Edit (instead of re-planning itself), then Trigger if trigger is true.
// Actions: Trigger, Enable, Pause, Resume, Cancel; a bulk action calls
// TriggerFrom(m, CauseBulk, now) for a trigger, and the same functions as
// single actions for the others. The view shows the new state fields,
// State.Phase, Model.OverdueAt, Model.SpreadOffset and, for a model with
// upstreams, UpstreamWaiting (with UpstreamOf of each upstream, missing
// ones left out of the map).
//
// Simulator. The spec's outcomes gain snooze (until or for) and success
// with unchanged; models gain upstreams. At one instant: actions,
// outcomes, the upstream triggers of the successes just applied, then
// TickAll for each due model, repeated until nothing more is due; each
// decision is a timeline entry with the fields of its event.
//
// Metrics. Metrics.count counts the new events; the gauges Overdue and
// WaitingForSlot are set from counts of the store by whoever exports them.
package refresh

import (
	"encoding/json"
	"time"
)

// Model is one refreshable model: what to run (queue, payload), when
// (policy) and where it stands (State).
type Model struct {
	ID    string `json:"id"`
	Queue string `json:"queue"`
	// Upstreams are the ids of the models whose changes trigger this one
	// (docs/policy.md); a missing one is allowed. See upstream.go.
	Upstreams []string `json:"upstreams,omitempty"`
	// UpstreamsMode is UpstreamsAll (also "") or UpstreamsAny.
	UpstreamsMode string `json:"upstreams_mode,omitempty"`

	Payload   json.RawMessage `json:"payload,omitempty"`
	Policy    Policy          `json:"policy"`
	CreatedAt time.Time       `json:"created_at"`
	State
}

// State is the part of a model that transitions change. A zero time.Time
// stands for null.
type State struct {
	// RefreshAt is when the scheduler must next look at the model: the next
	// start or, while an attempt runs, its deadline. Zero: nothing planned.
	RefreshAt           time.Time  `json:"refresh_at,omitzero"`
	DeadlineAt          time.Time  `json:"deadline_at,omitzero"`
	AttemptNo           int        `json:"attempt_no"`
	AttemptUID          string     `json:"attempt_uid,omitempty"`
	StartedAt           time.Time  `json:"started_at,omitzero"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	FailingSince        time.Time  `json:"failing_since,omitzero"`
	LastSuccessAt       time.Time  `json:"last_success_at,omitzero"`
	LastError           *LastError `json:"last_error,omitempty"`
	DisabledAt          time.Time  `json:"disabled_at,omitzero"`
	DisabledReason      string     `json:"disabled_reason,omitempty"`
	Paused              bool       `json:"paused"`
	StatusMessage       string     `json:"status_message,omitempty"`

	// The state of the extensions (docs/policy.md). Each stays zero
	// for a model that does not use its extension.

	// LastChangedAt is the end of the last success that changed the data:
	// every success sets it but an unchanged one. Dependents compare it
	// with their last_success_at.
	LastChangedAt time.Time `json:"last_changed_at,omitzero"`
	// DebounceAt is when the triggers of the open debounce window take
	// effect; zero: no window is open.
	DebounceAt time.Time `json:"debounce_at,omitzero"`
	// DebounceSince is t0, the time of the first trigger of the open
	// window, from which max_wait counts.
	DebounceSince time.Time `json:"debounce_since,omitzero"`
	// DebounceCause is CauseUpstream when every trigger of the open window
	// came from an upstream (its effect then leaves a disabled model
	// disabled), else "".
	DebounceCause string `json:"debounce_cause,omitempty"`
	// OverdueSince is the overdue instant of the open freshness episode,
	// (last_success_at ?? created_at) + max_age as it was when the episode
	// opened; zero: none open. It marks the episode too: freshness_lost was
	// published for it and is not published again until a success or an
	// edit closes it.
	OverdueSince time.Time `json:"overdue_since,omitzero"`
	// SnoozedSince is the time of the first snooze of the round; zero
	// after a success, a wait_next, a trigger, an enable or a cancel.
	SnoozedSince time.Time `json:"snoozed_since,omitzero"`
	// WaitingForSlot is set while the model is due but a concurrency limit
	// that matches it is full: it is not started and is not an attempt.
	WaitingForSlot bool `json:"waiting_for_slot,omitempty"`
	// OffSchedule is set when refresh_at falls on a scheduled occurrence
	// but was planned by a trigger, a retry delay or a snooze, which the
	// catch-up window never skips. It is kept only for a policy with
	// max_lateness.
	OffSchedule bool `json:"off_schedule,omitempty"`
}

// LastError is the most recent failure of a model, kept for display.
type LastError struct {
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// Running reports whether an attempt of the model is in flight.
func (s State) Running() bool { return s.AttemptUID != "" }

// Disabled reports whether the model was disabled by a final failure.
func (s State) Disabled() bool { return !s.DisabledAt.IsZero() }
