package refresh

import (
	"context"
	"encoding/json"
	"time"
)

// Queue hands jobs to workers, publishes lifecycle events and tells
// workers which attempts are over. The queue package implements it on
// Redis, refresh/memory in process.
type Queue interface {
	// Push enqueues jobs, each on the queue named by its Queue field.
	Push(ctx context.Context, jobs []Job) error
	// Publish announces lifecycle events to other services. It must not
	// keep events after it returns.
	Publish(ctx context.Context, events []Event) error
	// Revoke tells the workers that the attempts are over although no
	// outcome ended them (superseded, cancelled, deleted): a worker drops
	// such a job unrun and stops one that runs.
	Revoke(ctx context.Context, revoked []Revocation) error
}

// Revocation is the notice that an attempt is over.
type Revocation struct {
	ModelID    string
	AttemptUID string
	// Reason is RevokedSuperseded, RevokedCancelled or RevokedDeleted.
	Reason string
	// DeadlineAt is the attempt's deadline; the notice is kept until then,
	// since no worker runs the attempt after it.
	DeadlineAt time.Time
}

// Reasons of a Revocation.
const (
	RevokedSuperseded = "superseded"
	RevokedCancelled  = "cancelled"
	RevokedDeleted    = "deleted"
)

// Outcomes is where workers' outcomes arrive. Receive moves messages to a
// pending list owned by the caller; Ack drops them once applied, so a
// consumer that dies between the two loses nothing.
type Outcomes interface {
	// Receive returns up to max outcomes, each stamped with its ArrivedAt.
	// If none is available it waits up to block for one (block <= 0: it
	// does not wait). Messages that cannot be decoded are set aside
	// (dead-lettered) by the implementation.
	Receive(ctx context.Context, max int, block time.Duration) ([]Outcome, error)
	// Ack acknowledges every outcome returned by Receive so far except
	// those in keep, which stay pending (a consumer that dies still loses
	// none of them) until a later Ack leaves them out of keep.
	Ack(ctx context.Context, keep []Outcome) error
	// DeadLetter sets aside o, an outcome returned by Receive that cannot
	// be applied, with the reason; it is acknowledged.
	DeadLetter(ctx context.Context, o Outcome, reason string) error
}

// Job is what a worker receives: one attempt of one model.
type Job struct {
	ModelID    string          `json:"model_id"`
	AttemptUID string          `json:"attempt_uid"`
	AttemptNo  int             `json:"attempt_no"`
	Queue      string          `json:"queue"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	StartedAt  time.Time       `json:"started_at"`
	DeadlineAt time.Time       `json:"deadline_at"`
}

// Outcome types a worker can report.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomeStatus  = "status"
	// OutcomeSnooze says "the input is not ready": the attempt ends and
	// the model tries again later (docs/policy.md). It carries Until
	// or For.
	OutcomeSnooze = "snooze"
)

// Outcome is what a worker reports about an attempt. Every outcome carries
// the attempt's uid; one whose uid is not the model's current one is stale.
type Outcome struct {
	ModelID    string `json:"model_id"`
	AttemptUID string `json:"attempt_uid"`
	// Type is success, failure, status or snooze.
	Type string `json:"outcome"`
	// Kind classifies a failure (e.g. "http_503", "validation").
	Kind string `json:"kind,omitempty"`
	// Message is the failure's message, or the progress text of a status.
	Message string `json:"message,omitempty"`
	// Retryable is true when absent.
	Retryable *bool `json:"retryable,omitempty"`
	// UserMessage, if set on a failure that disables the model, becomes the
	// customer-facing disabled reason.
	UserMessage string `json:"user_message,omitempty"`
	// Until is when a snooze asks to be tried again (RFC 3339). A snooze
	// sets exactly one of Until and For.
	Until time.Time `json:"until,omitzero"`
	// For is how long after the outcome is applied a snooze asks to be
	// tried again.
	For Duration `json:"for,omitzero"`
	// Unchanged, on a success, says that the data did not change: the
	// success sets no last_changed_at, so no dependent is triggered.
	Unchanged bool `json:"unchanged,omitempty"`

	// ArrivedAt is when a consumer took the outcome off the outcomes list
	// (or recovered it from a dead consumer): lateness is judged at this
	// time and the attempt ends at it. Zero means "when applied".
	ArrivedAt time.Time `json:"-"`
	// Raw is the message as the transport carried it, for dead letters.
	Raw string `json:"-"`
}

// Event is a lifecycle event: a transition applied to a model, with the
// state after it. The simulator prints them; the queue publishes them.
type Event struct {
	At         time.Time     `json:"at"`
	ModelID    string        `json:"model_id"`
	Type       string        `json:"event"`
	Decision   string        `json:"decision,omitempty"`
	Kind       string        `json:"kind,omitempty"`
	Message    string        `json:"message,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	Delay      time.Duration `json:"delay,omitempty"`
	AttemptNo  int           `json:"attempt_no"`
	AttemptUID string        `json:"attempt_uid,omitempty"`
	// AttemptDeadlineAt is the deadline of the attempt concerned, when the
	// event ends one without an outcome (trigger, cancel, delete).
	AttemptDeadlineAt time.Time `json:"attempt_deadline_at,omitzero"`
	RefreshAt         time.Time `json:"refresh_at,omitzero"`
	DeadlineAt        time.Time `json:"deadline_at,omitzero"`
	Disabled          bool      `json:"disabled"`

	// The fields of the extensions (docs/policy.md), absent when
	// unused.

	// Cause is what asked for a trigger or debounce: upstream, bulk, or
	// absent (an API or simulator action).
	Cause string `json:"cause,omitempty"`
	// Upstream is the upstream whose success caused a trigger.
	Upstream string `json:"upstream,omitempty"`
	// Unchanged marks a success whose data did not change.
	Unchanged bool `json:"unchanged,omitempty"`
	// Until is the time a snooze asked for.
	Until time.Time `json:"until,omitzero"`
	// OverdueSince is the overdue instant of the episode of a
	// freshness_lost or freshness_restored; the webhook idempotency key of
	// those events is "{model_id}:{event}:{overdue_since}" (see
	// IdempotencyKey).
	OverdueSince time.Time `json:"overdue_since,omitzero"`
	// OverdueFor is the length of the episode a freshness_restored ends.
	OverdueFor time.Duration `json:"overdue_for,omitempty"`
	// State is the model's state when it became overdue
	// (freshness_lost): disabled, paused, running, snoozed, retrying,
	// waiting_for_slot, scheduled or idle.
	State string `json:"state,omitempty"`
	// Missed is how many scheduled occurrences a skip passed over.
	Missed int `json:"missed,omitempty"`
	// DebounceAt is the model's debounce_at after the event (a trigger
	// that opened or extended a window).
	DebounceAt time.Time `json:"debounce_at,omitzero"`
	// WaitingForSlot is the model's waiting_for_slot after the event.
	WaitingForSlot bool `json:"waiting_for_slot,omitempty"`
	// Recovered marks a success that ended a streak of failures; it is
	// published as succeeded, then recovered.
	Recovered bool `json:"recovered,omitempty"`
	// Raw, if set, is the event's JSON as json.Marshal encodes it, kept by
	// the store it was read from: Queue.Publish sends it as it is instead
	// of encoding the event again.
	Raw json.RawMessage `json:"-"`
}
