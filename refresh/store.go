package refresh

import (
	"context"
	"time"
)

// Store keeps models and their attempt history. Implementations:
// refresh/memory and refresh/postgres; both pass refresh/storetest.
//
// Every method that changes models takes a function that computes the
// changes from the locked rows; the store writes what it returns in the same
// transaction, so a model is never changed by two callers at once.
type Store interface {
	// Get returns the model with id, or an *Error with code ENOTFOUND.
	Get(ctx context.Context, id string) (Model, error)
	// List returns models matching f, ordered by id, at most f.Limit.
	List(ctx context.Context, f Filter) ([]Model, error)
	// History returns the attempts of model id, newest first, at most limit.
	History(ctx context.Context, id string, limit int) ([]Attempt, error)
	// Delete removes the model with id and its history, or returns an
	// *Error with code ENOTFOUND.
	Delete(ctx context.Context, id string) error

	// Modify locks the models with the given ids that exist, passes them to
	// fn (in no particular order, missing ids left out), and writes the
	// changes fn returns. If fn returns an error nothing is written and
	// Modify returns that error. A Change for an id that does not exist
	// creates the model.
	Modify(ctx context.Context, ids []string, fn func(found []Model) ([]Change, error)) error

	// ClaimDue locks up to limit due models and passes them to fn, then
	// writes the changes fn returns, all in one transaction. A model is due
	// when its RefreshAt is set and <= now, unless it is paused and idle
	// (paused models still time out). Concurrent callers never receive the
	// same model. It returns how many models were claimed.
	ClaimDue(ctx context.Context, now time.Time, limit int, fn func(due []Model) ([]Change, error)) (int, error)

	// NextDue returns the earliest RefreshAt of a model that can become due
	// (see ClaimDue), and false if there is none.
	NextDue(ctx context.Context) (time.Time, bool, error)
}

// Change is one model written by a Store, with the history row it touches.
type Change struct {
	Model    Model
	Decision Decision
	// Attempt, if set, is upserted into the history by its UID: a start
	// inserts the row, the end of the attempt completes it.
	Attempt *Attempt
}

// Attempt is one row of a model's attempt history.
type Attempt struct {
	ModelID    string    `json:"model_id"`
	UID        string    `json:"uid"`
	AttemptNo  int       `json:"attempt_no"`
	StartedAt  time.Time `json:"started_at"`
	DeadlineAt time.Time `json:"deadline_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Outcome is "" while running, then success, failure, timeout,
	// superseded (by a trigger) or cancelled.
	Outcome      string        `json:"outcome,omitempty"`
	ErrorKind    string        `json:"error_kind,omitempty"`
	ErrorMessage string        `json:"error_message,omitempty"`
	Decision     string        `json:"decision,omitempty"`
	Delay        time.Duration `json:"delay,omitempty"`
}

// Filter selects models for List. Nil booleans do not filter.
type Filter struct {
	Disabled *bool
	Failing  *bool // consecutive_failures > 0
	Running  *bool
	Paused   *bool
	Queue    string
	// After is the keyset cursor: only ids greater than After.
	After string
	// Limit caps the result; 0 means 100.
	Limit int
}
