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
	ID        string          `json:"id"`
	Queue     string          `json:"queue"`
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
