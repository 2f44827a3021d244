package refresh

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file holds the bulk actions of docs/policy.md: trigger,
// enable, pause, resume or cancel every model a selector matches. The
// selector is checked whole and resolved once, at the start, into the ids
// it matches then; the action is then applied in batches of BulkBatchSize
// models, one transaction each, every model getting exactly the transition
// and the event of its single action (a trigger's carries the cause
// CauseBulk) and, with an AuditInfo in the context, its own audit entry
// marked Bulk.

// BulkBatchSize is the number of models one transaction of a bulk action
// changes.
const BulkBatchSize = 500

// bulkListPage is the page size a selector is resolved with.
const bulkListPage = 1000

// States are the states a selector may name, those of State.Phase.
var States = []string{PhaseDisabled, PhasePaused, PhaseRunning, PhaseSnoozed, PhaseRetrying,
	PhaseWaitingForSlot, PhaseScheduled, PhaseIdle}

// Selector chooses models by the list filters: an id prefix, a queue, a
// state (State.Phase) and whether a freshness episode is open (overdue).
// Every criterion set must hold; the zero Selector matches every model.
type Selector struct {
	Prefix  string
	Queue   string
	State   string
	Overdue *bool
}

// IsZero reports whether s names no criterion, and so matches every
// model.
func (s Selector) IsZero() bool {
	return s.Prefix == "" && s.Queue == "" && s.State == "" && s.Overdue == nil
}

// Check returns the rules s breaks, each named by its field under
// "selector." (selector.state: must be one of ...).
func (s Selector) Check() []FieldError {
	var errs []FieldError
	if s.Prefix != "" && !ValidID(s.Prefix) {
		errs = append(errs, FieldError{Field: "selector.prefix", Rule: "must be the start of a model id: " + IDRule})
	}
	if s.Queue != "" && !ValidQueue(s.Queue) {
		errs = append(errs, FieldError{Field: "selector.queue", Rule: QueueRule})
	}
	if s.State != "" && !slices.Contains(States, s.State) {
		errs = append(errs, FieldError{Field: "selector.state", Rule: fmt.Sprintf("must be one of %s, got %q", strings.Join(States, ", "), shortText(s.State))})
	}
	return errs
}

// Matches reports whether m meets every criterion of s.
func (s Selector) Matches(m Model) bool {
	return strings.HasPrefix(m.ID, s.Prefix) &&
		(s.Queue == "" || m.Queue == s.Queue) &&
		(s.State == "" || m.Phase() == s.State) &&
		(s.Overdue == nil || *s.Overdue == !m.OverdueSince.IsZero())
}

// filter returns the store filter that narrows a listing to s's models as
// far as Filter can say; Matches decides. The prefix is the range the
// store reads, so that resolving the selector of a prefix costs its
// models only.
func (s Selector) filter() Filter {
	f := Filter{Prefix: s.Prefix, Queue: s.Queue, Limit: bulkListPage, NoPayload: true}
	yes, no := true, false
	switch s.State {
	case PhaseDisabled:
		f.Disabled = &yes
	case PhasePaused:
		f.Disabled, f.Paused = &no, &yes
	case PhaseRunning:
		f.Disabled, f.Paused, f.Running = &no, &no, &yes
	case PhaseSnoozed, PhaseRetrying, PhaseWaitingForSlot, PhaseScheduled, PhaseIdle:
		f.Disabled, f.Paused, f.Running = &no, &no, &no
	}
	return f
}

// BulkRequest is a bulk action: Action on the models Selector matches.
type BulkRequest struct {
	Action   string
	Selector Selector
	// All must be set for a selector that names no criterion, and only
	// then: it says that every model is meant.
	All bool
	// DryRun counts the models that match and those the action would
	// change, and writes nothing.
	DryRun bool
}

// BulkResult is what a bulk action did. Matched counts the models the
// selector matched at the start; a dry run sets WouldChange, any other
// Changed, Unchanged (no-op actions, which write nothing) and Failed.
type BulkResult struct {
	Matched     int
	WouldChange int
	Changed     int
	Unchanged   int
	Failed      []BulkFailure
}

// BulkFailure is a model a bulk action could not change, and why.
type BulkFailure struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// actionFunc returns the transition of action; cause is that of a
// trigger (TriggerFrom).
func actionFunc(action, cause string) (func(Model, time.Time) (Model, Decision), error) {
	switch action {
	case ActionTrigger:
		return func(m Model, now time.Time) (Model, Decision) { return TriggerFrom(m, cause, now) }, nil
	case ActionEnable:
		return Enable, nil
	case ActionPause:
		return func(m Model, _ time.Time) (Model, Decision) { return Pause(m) }, nil
	case ActionResume:
		return Resume, nil
	case ActionCancel:
		return Cancel, nil
	}
	return nil, Errorf(EINVALID, "unknown action %q: want trigger, enable, pause, resume or cancel", shortText(action))
}

// CheckBulk returns the rules req breaks, each named by its field: an
// unknown action, a broken selector, a selector that names no criterion
// without all, or all with one that does.
func CheckBulk(req BulkRequest) error {
	var errs []FieldError
	if _, err := actionFunc(req.Action, CauseBulk); err != nil {
		errs = append(errs, FieldError{Field: "action", Rule: "must be trigger, enable, pause, resume or cancel, got " + fmt.Sprintf("%q", shortText(req.Action))})
	}
	errs = append(errs, req.Selector.Check()...)
	switch {
	case req.Selector.IsZero() && !req.All:
		errs = append(errs, FieldError{Field: "selector", Rule: "names no criterion, so it matches every model: name one (prefix, queue, state, overdue) or set all: true"})
	case !req.Selector.IsZero() && req.All:
		errs = append(errs, FieldError{Field: "all", Rule: "means every model: leave it out or the selector"})
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

// Bulk applies a bulk action (see the top of this file) and says what it
// did. It checks req whole first (CheckBulk) and writes nothing if it
// breaks a rule. A model that is gone by its turn, or that a store error
// kept from changing, is listed in Failed; the others are counted in
// Changed or Unchanged. If ctx ends, Bulk returns its error and the
// batches written so far stay written.
func (s *Service) Bulk(ctx context.Context, req BulkRequest) (BulkResult, error) {
	if err := CheckBulk(req); err != nil {
		return BulkResult{}, err
	}
	apply, _ := actionFunc(req.Action, CauseBulk) // checked
	// The snapshot is the ids: each batch reads its models locked, and a
	// dry run looks at each model as it is listed, so that a bulk action
	// never holds more models (and payloads) than a page or a batch.
	var res BulkResult
	each := func(Model) {}
	if req.DryRun {
		now := s.Clock.Now()
		each = func(m Model) {
			if _, d := apply(m, now); !d.Unchanged {
				res.WouldChange++
			}
		}
	}
	ids, err := s.selectIDs(ctx, req.Selector, each)
	if err != nil {
		return BulkResult{}, fmt.Errorf("%s models: select: %w", req.Action, err)
	}
	res.Matched = len(ids)
	if req.DryRun {
		return res, nil
	}
	for chunk := range slices.Chunk(ids, BulkBatchSize) {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("%s models: %w", req.Action, err)
		}
		s.bulkBatch(ctx, chunk, req.Action, apply, &res)
	}
	return res, nil
}

// selectIDs returns the ids of the models sel matches now, in id order,
// passing each of those models to each as it is listed.
func (s *Service) selectIDs(ctx context.Context, sel Selector, each func(Model)) ([]string, error) {
	f := sel.filter()
	var out []string
	for {
		page, err := s.Store.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if sel.Matches(m) {
				each(m)
				out = append(out, m.ID)
			}
		}
		if len(page) < f.Limit {
			return out, nil
		}
		f.After = page[len(page)-1].ID
	}
}

// bulkBatch applies action to the models ids in one transaction, counting
// into res. It does not wait for models another caller holds: they are
// acted on one by one afterwards, each waiting as a single action does.
func (s *Service) bulkBatch(ctx context.Context, ids []string, action string, apply func(Model, time.Time) (Model, Decision), res *BulkResult) {
	var ch changes
	var busy, missing []string
	changed, unchanged := 0, 0
	err := s.Store.TryModify(ctx, ids, func(found []Model, held []string) (Batch, error) {
		now := s.Clock.Now() // once locked, as in write
		ch = changes{}
		changed, unchanged, busy = 0, 0, held
		seen := make(map[string]bool, len(ids))
		for _, id := range held {
			seen[id] = true
		}
		for _, m := range found {
			seen[m.ID] = true
			after, d := apply(m, now)
			ch.add(m, after, d, now)
			if d.Unchanged {
				unchanged++
				continue
			}
			changed++
			if e, ok := auditEntry(ctx, m.ID, action, now); ok {
				e.Bulk = true
				ch.Audit = append(ch.Audit, e)
			}
		}
		missing = missing[:0]
		for _, id := range ids {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		return ch.Batch, nil
	})
	if err != nil {
		s.bulkFailed(ids, action, err, res)
		return
	}
	s.committed(ch.Events, len(ch.Events) > 0)
	res.Changed += changed
	res.Unchanged += unchanged
	for _, id := range missing {
		res.Failed = append(res.Failed, BulkFailure{ID: id, Error: fmt.Sprintf("model %q not found: deleted since the selector was resolved", id)})
	}
	for _, id := range busy {
		_, d, err := s.act(ctx, id, action, apply, true)
		switch {
		case err != nil:
			s.bulkFailed([]string{id}, action, err, res)
		case d.Unchanged:
			res.Unchanged++
		default:
			res.Changed++
		}
	}
}

// bulkFailed lists ids as failed by err.
func (s *Service) bulkFailed(ids []string, action string, err error, res *BulkResult) {
	if ErrorCode(err) == EINTERNAL && s.Logger != nil {
		s.Logger.Error("bulk action failed", "action", action, "models", len(ids), "err", err)
	}
	msg := ErrorMessage(err)
	for _, id := range ids {
		res.Failed = append(res.Failed, BulkFailure{ID: id, Error: msg})
	}
}

// shortText returns s for an error message, cut at 40 bytes.
func shortText(s string) string {
	if len(s) <= 40 {
		return s
	}
	return cutText(s, 40) + "..."
}
