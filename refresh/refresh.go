// Package refresh is Freshen's domain: refresh policies, the state of a
// model, the pure transitions of DESIGN.md section 3, and the loops that apply
// them (the scheduler tick and the outcome consumer).
//
// It imports no infrastructure. The loops talk to the small Store, Queue and
// Outcomes interfaces declared here; refresh/memory, refresh/postgres and
// queue implement them. Time comes from one injected Clock.
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
	// (DESIGN.md section 6); a missing one is allowed. See upstream.go.
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

	// The state of the extensions (DESIGN.md section 6). Each stays zero
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
