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
	// Publish announces lifecycle events to other services.
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
)

// Outcome is what a worker reports about an attempt. Every outcome carries
// the attempt's uid; one whose uid is not the model's current one is stale.
type Outcome struct {
	ModelID    string `json:"model_id"`
	AttemptUID string `json:"attempt_uid"`
	// Type is success, failure or status.
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

	// Raw, if set, is the event's JSON as json.Marshal encodes it, kept by
	// the store it was read from: Queue.Publish sends it as it is instead
	// of encoding the event again.
	Raw json.RawMessage `json:"-"`
}
