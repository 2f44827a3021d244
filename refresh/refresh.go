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
// and the events (NewEvents: the decision's own and, in Decision.Also, the
// freshness_restored of a success that ends a freshness episode or the
// trigger of an update that re-enables a disabled model).
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
//   - Limits (slots.go, rate.go, fair.go). TickInput.FullLimit says that
//     a matching limit holds the start back (no free slot, or a rate limit
//     that admits no start before TickInput.Until); the start waits
//     (WaitForSlot: waiting_for_slot, waiting_until, waiting_tenant, one
//     wait event per wait; WaitTooLong past max_lateness) and the model
//     stays due. Limit.Admits is a rate limit's sliding window, Tenant and
//     FairOrder the fair turns.
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
// # Where they are applied
//
// Stores keep every field of Model and State and index Model.DueAt: the
// scheduler's ClaimDue claims by due_at, then id, and passes the
// concurrency limits covering the claimed models with their current
// attempts, counted under transaction-scoped advisory locks so that
// instances agree (Slots). A write of upstreams is refused in its
// transaction if it would make a cycle (CheckUpstreamCycle).
//
// Scheduler applies TickAll to each claimed model (see scheduler.go),
// starting in the fair turns of the tenants while slots and starts last;
// a model that must wait stays due, marked waiting_for_slot, and is
// looked at again every SlotPoll, or when its rate limit admits a start
// again if sooner.
//
// Consumer applies outcomes with ApplyOutcome, snooze and unchanged
// included (the queue decoder reads them and dead-letters a malformed one
// with CheckOutcome's field-named reason).
//
// Publisher calls Service.Propagate (propagate.go) on the events it is
// about to publish, in their transaction: the successes that changed data
// trigger their dependents (UpstreamTrigger); a crash before the commit
// publishes and propagates them again, and UpstreamCovered keeps a second
// pass from triggering twice. It revokes the attempts EventRevocation
// names (trigger, debounce, cancel, delete).
//
// Service writes upstreams and applies Update; the HTTP API shows the new
// state fields, the upstreams' status and UpstreamWaiting's sentence;
// bulk actions use the single actions' transitions (bulk.go).
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
	// RateKey is the key of the rate_key limits that cover the model
	// (e.g. the host of the URL it pulls), set by the caller; "" for none.
	// See ValidRateKey.
	RateKey string `json:"rate_key,omitempty"`

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
	// WaitingLimit names the limit the wait is for (Limit.Name, e.g.
	// "prefix:acme-") while WaitingForSlot is set, else "": the stores
	// offer that limit's free slots to its waiting models.
	WaitingLimit string `json:"waiting_limit,omitempty"`
	// WaitingUntil is, while the model waits for a rate limit, the
	// earliest instant that limit admits a start as known when the wait
	// was last decided; zero for a wait for a concurrency slot.
	WaitingUntil time.Time `json:"waiting_until,omitzero"`
	// WaitingTenant is, while the model waits, its tenant (Tenant): the
	// stores offer a limit's free starts and slots to the tenants waiting
	// for it in turn.
	WaitingTenant string `json:"waiting_tenant,omitempty"`
	// WaitTooLong is set once the model's wait has lasted longer than its
	// policy's max_lateness (now - refresh_at), when the wait_too_long
	// event is published: it marks the wait, so that the event is
	// published once per wait. The end of the wait clears it.
	WaitTooLong bool `json:"wait_too_long,omitempty"`
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
