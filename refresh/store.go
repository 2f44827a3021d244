package refresh

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"
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
	// History returns the attempts of model id that started before
	// before (all when before is zero), newest first, at most limit (all
	// when limit <= 0). The StartedAt of the last attempt of a page is the
	// before of the next.
	History(ctx context.Context, id string, before time.Time, limit int) ([]Attempt, error)

	// Modify locks the models with the given ids that exist, waiting for
	// other callers that hold them, passes them to fn (in no particular
	// order, missing ids left out), and writes the batch fn returns, all in
	// one transaction. If fn returns an error nothing is written and Modify
	// returns that error. A Change for an id that does not exist creates
	// the model. A store that bounds the wait answers an *Error with code
	// EUNAVAILABLE when a model stays locked too long.
	Modify(ctx context.Context, ids []string, fn func(found []Model) (Batch, error)) error

	// TryModify is Modify without waiting: models that another caller
	// holds are not locked and are passed to fn as busy ids instead. It
	// passes the models without their payload (Payload nil) and leaves
	// the stored payloads as they are, whatever the changes hold: its
	// callers (outcomes, bulk actions) never change a payload, and a batch
	// of them then holds none, however large the payloads.
	TryModify(ctx context.Context, ids []string, fn func(found []Model, busy []string) (Batch, error)) error

	// ClaimDue locks up to limit due models and passes them to fn, then
	// writes the batch fn returns, all in one transaction. A model is due
	// when its DueAt is set and <= now (Model.DueAt: refresh_at unless
	// paused and idle, an open debounce window, the overdue instant).
	// Models that do not wait for a slot come first, by DueAt then id.
	// While limits exist or models wait for a slot (waiting_for_slot),
	// the store adds the waiting models that may start: for each limit
	// with free slots and starts (the fewer of MaxRunning less its current
	// attempts and, for a rate limit, what Limit.Admits admits from its
	// log at now), as many of the models waiting for it, in the fair turns
	// of their waiting_tenant after the limit's turn (FairOrder: rank
	// within the tenant, the tenants in turn, refresh_at, id), leaving out
	// those a full limit covers (so the first in turn get the slots and
	// starts that freed, however full the batch); the models waiting for a
	// limit that no longer exists; then waiting models in that order, as
	// many as the batch has room for. Concurrent callers never receive the
	// same model, and take turns while limits exist, so that slots and
	// starts go in that order across instances. Without limits, a call
	// made while another holds a full batch may start past that batch and
	// leave models due before its end to the calls after it. It passes
	// models in that order only while their payloads add up to at most
	// BatchPayloadBytes (the first one whatever its size): the models it
	// leaves out stay due for the next call. It returns how many models
	// were claimed (passed to fn).
	//
	// slots holds the limits that cover at least one claimed or waiting
	// model, their current attempts, the rate limits' logs and the limits'
	// turns, read in the same transaction while the callers' turn is held
	// (so that instances agree on the free slots and starts), and the
	// tenants; it is empty when no limit exists. The store appends the
	// batch's Starts to the logs and keeps their tenants as the limits'
	// turns in the same transaction. fn must not reorder or change due (a
	// store may find each row by its position).
	ClaimDue(ctx context.Context, now time.Time, limit int, fn func(due []Model, slots Slots) (Batch, error)) (int, error)

	// NextDue returns the earliest DueAt of a model that can become due and
	// does not wait for a slot (see ClaimDue), and false if there is none.
	NextDue(ctx context.Context) (time.Time, bool, error)

	// Dependents returns the models whose upstreams name one of ids: the
	// upstreams of each, by its id.
	Dependents(ctx context.Context, ids []string) (map[string][]string, error)
	// Upstreams returns the view as an upstream (UpstreamOf) of each model
	// among ids that exists, by id; missing ones are left out.
	Upstreams(ctx context.Context, ids []string) (map[string]Upstream, error)

	// Limits returns the limits, by kind then key.
	Limits(ctx context.Context) ([]Limit, error)
	// PutLimit creates or replaces limit l; with onlyNew, an existing limit
	// of the same kind and key is kept, and PutLimit reports false.
	PutLimit(ctx context.Context, l Limit, onlyNew bool) (bool, error)
	// DeleteLimit removes the limit of kind and key, and its log of starts
	// if it is a rate limit, or returns an *Error with code ENOTFOUND.
	DeleteLimit(ctx context.Context, kind, key string) error
	// CountModels counts the models by state (see ModelCounts), overall
	// and for the maxQueues queues with the most models.
	CountModels(ctx context.Context, maxQueues int) (ModelCounts, map[string]ModelCounts, error)
	// Census counts by state (see ModelCounts) the first f.Limit models
	// that f selects, in id order (100 when f.Limit <= 0), overall and for
	// the maxQueues queues with the most of them, in one read of at most
	// f.Limit+1 models through the id order: its cost grows with
	// f.Limit, never with the models outside f.Prefix.
	Census(ctx context.Context, f Filter, maxQueues int) (Census, error)

	// TakeEvents passes the oldest lifecycle events written with the
	// batches (about limit of them, in the order their batches committed)
	// to fn and, if fn returns nil, forgets them, in one transaction. It
	// returns how many it passed. One caller at a time takes events, so
	// the events of one model are published in order; the others get
	// ErrBusy at once. fn must not keep the slice after it returns.
	TakeEvents(ctx context.Context, limit int, fn func(events []Event) error) (int, error)

	// PruneHistory deletes attempts of the history as r asks (see
	// PruneRequest), in one transaction short enough that no write waits
	// long behind it. One caller at a time prunes: the others get a result
	// with Busy set at once.
	PruneHistory(ctx context.Context, r PruneRequest) (PruneResult, error)
}

// BatchPayloadBytes bounds the payloads of the models one read of many
// holds (but for the first, which is read whatever its size): the models
// one ClaimDue call passes to fn, of which a scheduler pass holds a few
// copies at once (as read, and in the jobs it pushes), and a page of
// models listed with Filter.BoundPayloads (which also reads the model that
// ends it, one past the bound). A crowd of models with large
// payloads then costs a pass or a request no more memory than this bound,
// however many models a batch or a page may hold.
const BatchPayloadBytes = 4 << 20

// PayloadBudget is what is left of BatchPayloadBytes in one claim or one
// page; a store asks it about each model in the order it passes them.
type PayloadBudget struct {
	left, taken int
}

// NewPayloadBudget returns the budget of one claim or one page.
func NewPayloadBudget() *PayloadBudget { return &PayloadBudget{left: BatchPayloadBytes} }

// Take reports whether a model whose payload has n bytes fits what is
// left, and counts it if so. The first model always fits; once
// one does not, none does, so that the models passed are the earliest.
func (b *PayloadBudget) Take(n int) bool {
	if b.left < 0 || (b.taken > 0 && n > b.left) {
		b.left = -1
		return false
	}
	b.left -= n
	b.taken++
	return true
}

// ErrBusy is returned by Store.TakeEvents when another caller is taking
// events.
var ErrBusy = errors.New("another caller is taking events")

// Batch is what one transaction writes: the changed models and the
// lifecycle events they publish. The events are kept with the models (an
// outbox), so an event is published once its change has committed, even if
// the process stops or the queue is down meanwhile.
type Batch struct {
	Changes []Change
	Events  []Event
	// Audit are the audit entries of the API writes the batch makes
	// (audit.go); the store sets their IDs.
	Audit []AuditEntry
	// BeforeCommitFunc, if set, is called once the batch is written and
	// before it commits, or, with HookBeforeWrite, before the batch is
	// written (the writes and the commit then go together): the scheduler
	// pushes the jobs of its starts there. If it returns an error, nothing
	// is written or committed and the store returns that error.
	BeforeCommitFunc func(ctx context.Context) error
	HookBeforeWrite  bool
	// Starts are the starts the batch makes under limits (a scheduler
	// pass's; under a limit without max_starts, only those that move its
	// turn): the store appends those of rate limits to each limit's log,
	// in the batch's transaction, and drops the entries older than the
	// limit's Per; and it keeps each limit's Tenant as its turn.
	Starts []LimitStarts
}

// Slots is what the scheduler needs to know of the concurrency limits in
// a pass: the limits that match a claimed model, in (kind, key) order, and
// Running[i], the current attempts (models with attempt_uid set, the
// claimed ones included) that Limits[i] covers.
//
// Rates[i] is the log of Limits[i]'s starts within its Per when it is a
// rate limit (nil otherwise), and Turns[i] its turn: the tenant of the
// last start made under it ("" for none; FairOrder). Tenants are the keys
// of every prefix limit, to which the scheduler adds the prefixes of the
// tokens (Tenant).
type Slots struct {
	Limits  []Limit
	Running []int
	Rates   [][]RateStarts
	Turns   []string
	Tenants []string
}

// Change is one model written by a Store, with the history row it touches.
type Change struct {
	Model    Model
	Decision Decision
	// Attempt, if set, is upserted into the history by its UID: a start
	// inserts the row, the end of the attempt completes it.
	Attempt *Attempt
	// Delete removes the model and its history instead of writing it.
	Delete bool
}

// A store refuses a write whose upstreams would close a cycle: it calls
// CheckUpstreamCycle in the transaction of the write, with the upstreams
// of the models reachable from the new ones, serialized with the other
// writes of upstreams, and returns the *ValidationError.

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

// Filter selects models for List and Census. Nil booleans do not filter.
type Filter struct {
	Disabled *bool
	Failing  *bool // consecutive_failures > 0
	Running  *bool
	Paused   *bool
	Queue    string
	// Prefix, if set, selects only the ids that start with it: the id
	// range [Prefix, PrefixEnd(Prefix)), which a store reads through its
	// id order, so that the models outside it cost nothing. This is how a
	// token limited to an id prefix (a tenant) is answered.
	Prefix string
	// After is the keyset cursor: only ids greater than After. An After
	// before Prefix starts at Prefix, one past its range selects nothing.
	After string
	// Until, if set, selects only ids up to Until, itself included.
	Until string
	// Limit caps the result; 0 means 100.
	Limit int
	// NoPayload leaves the models' Payload nil, for a caller that does not
	// need it (a page of models then holds no payloads).
	NoPayload bool
	// BoundPayloads ends the list with the first model whose payload does
	// not fit a PayloadBudget (the first model always fits): the models
	// before it hold at most BatchPayloadBytes of payloads, whatever
	// Limit. A caller passes on the models a PayloadBudget takes and
	// stops at the first it refuses; the list tells where it was cut, so
	// that one read suffices: a list shorter than Limit whose models all
	// fit holds the last models that match.
	BoundPayloads bool
}

// Delivery is one lifecycle event due to one webhook endpoint: a row of the
// deliveries a DeliveryStore writes in the transaction that takes the
// event from the outbox, so that no event is lost between the two, and
// that the webhook dispatcher then sends until it is delivered or given
// up.
type Delivery struct {
	// ID is the store's key, set when the delivery is read back.
	ID       int64
	Endpoint string
	ModelID  string
	// Event is the webhook's name of the event (e.g. disabled).
	Event string
	// Key is the idempotency key, the same on every send of the delivery.
	Key string
	// Payload is the request body.
	Payload []byte
	// CreatedAt is the time of the event; the delivery's age counts from it.
	CreatedAt time.Time
	// Attempts is how many sends were started, the claimed one included.
	Attempts int
	// Claim fences a claimed delivery: only its holder records its result.
	Claim string
}

// DeliveryStore is a Store that keeps webhook deliveries with the events.
// TakeEventsRouted is TakeEvents whose fn also returns deliveries, written
// in the transaction that forgets the events (none if fn fails).
// refresh/postgres implements it.
type DeliveryStore interface {
	TakeEventsRouted(ctx context.Context, limit int, fn func(events []Event) ([]Delivery, error)) (int, error)
}

// States of a Delivery.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// DeliveryResult is what one send of a claimed Delivery ended in.
type DeliveryResult struct {
	// State is DeliveryDelivered, DeliveryFailed (given up), or
	// DeliveryPending (sent again at At).
	State string
	// At is when the delivery was delivered or given up, or when it is
	// next due.
	At time.Time
	// Status is the HTTP status of the answer, 0 if none came.
	Status int
	// Error says why the send failed.
	Error string
}

// Census is what Store.Census counted.
type Census struct {
	// All counts the models counted; Queues the maxQueues queues with
	// the most of them, by name.
	All    ModelCounts
	Queues map[string]ModelCounts
	// More reports whether the filter selects models past those counted;
	// Last is the id of the last one counted ("" if none).
	More bool
	Last string
}

// PrefixEnd returns the least string greater than every string that
// starts with prefix, and false when there is none (an empty prefix, or
// one of only the greatest runes or bytes): the ids that start with
// prefix are those in [prefix, end). For valid UTF-8 it counts in runes
// (so the end is valid UTF-8 too, and byte order is rune order); the
// prefix of a model id (ValidID) is ASCII, and so is its end.
func PrefixEnd(prefix string) (string, bool) {
	if utf8.ValidString(prefix) {
		runes := []rune(prefix)
		for i := len(runes) - 1; i >= 0; i-- {
			switch r := runes[i]; {
			case r == utf8.MaxRune:
				continue
			case r == 0xD7FF: // the surrogates are no runes of UTF-8
				runes[i] = 0xE000
			default:
				runes[i] = r + 1
			}
			return string(runes[:i+1]), true
		}
		return "", false
	}
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
