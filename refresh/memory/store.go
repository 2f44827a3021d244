// Package memory implements refresh.Store and the refresh queue interfaces
// in process memory. It backs the simulator, the embedded demo and tests;
// production uses refresh/postgres and queue.
package memory

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

var _ refresh.Store = (*Store)(nil)

// Store keeps models and history in maps behind one mutex. Functions passed
// to Modify and ClaimDue run while it is held, so no two callers ever see
// the same model at once.
type Store struct {
	mu       sync.Mutex
	models   map[string]refresh.Model
	attempts map[string][]refresh.Attempt // by model id, oldest first
	events   []refresh.Event              // written, not yet taken
	taking   bool                         // a TakeEvents call is running
	audit    auditLog                     // audit entries, kept after their model
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{models: map[string]refresh.Model{}, attempts: map[string][]refresh.Attempt{}}
}

// clone returns a copy of m that shares no mutable memory with the store
// (policies are never changed in place).
func clone(m refresh.Model) refresh.Model {
	m.Payload = append(json.RawMessage(nil), m.Payload...)
	if m.LastError != nil {
		e := *m.LastError
		m.LastError = &e
	}
	return m
}

// Get returns the model with id.
func (s *Store) Get(_ context.Context, id string) (refresh.Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models[id]
	if !ok {
		return refresh.Model{}, refresh.Errorf(refresh.ENOTFOUND, "model %q not found", id)
	}
	return clone(m), nil
}

func matches(m refresh.Model, f refresh.Filter) bool {
	is := func(want *bool, got bool) bool { return want == nil || *want == got }
	return is(f.Disabled, m.Disabled()) && is(f.Failing, m.ConsecutiveFailures > 0) &&
		is(f.Running, m.Running()) && is(f.Paused, m.Paused) &&
		(f.Queue == "" || f.Queue == m.Queue) && m.ID > f.After
}

// List returns the models matching f in id order.
func (s *Store) List(_ context.Context, f refresh.Filter) ([]refresh.Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []refresh.Model
	for _, m := range s.models {
		if matches(m, f) {
			out = append(out, clone(m))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// History returns the attempts of model id that started before before
// (all when zero), newest first, at most limit.
func (s *Store) History(_ context.Context, id string, before time.Time, limit int) ([]refresh.Attempt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.models[id]; !ok {
		return nil, refresh.Errorf(refresh.ENOTFOUND, "model %q not found", id)
	}
	all := s.attempts[id]
	var out []refresh.Attempt
	for i := len(all) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if before.IsZero() || all[i].StartedAt.Before(before) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// Modify passes the existing models among ids to fn and writes its batch.
func (s *Store) Modify(ctx context.Context, ids []string, fn func([]refresh.Model) (refresh.Batch, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := fn(s.find(ids))
	if err != nil {
		return err
	}
	return s.commit(ctx, b)
}

// TryModify is Modify: no other caller can hold a model while it runs, so
// no model is ever busy.
func (s *Store) TryModify(ctx context.Context, ids []string, fn func([]refresh.Model, []string) (refresh.Batch, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := fn(s.find(ids), nil)
	if err != nil {
		return err
	}
	return s.commit(ctx, b)
}

// find returns copies of the existing models among ids; the caller holds
// s.mu.
func (s *Store) find(ids []string) []refresh.Model {
	var found []refresh.Model
	for _, id := range ids {
		if m, ok := s.models[id]; ok {
			found = append(found, clone(m))
		}
	}
	return found
}

// due reports whether m can be claimed at now.
func due(m refresh.Model, now time.Time) bool {
	return !m.RefreshAt.IsZero() && !m.RefreshAt.After(now) && (!m.Paused || m.Running())
}

// ClaimDue passes up to limit due models, earliest refresh_at first, to fn
// and writes its changes.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, limit int, fn func([]refresh.Model) (refresh.Batch, error)) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var batch []refresh.Model
	for _, m := range s.models {
		if due(m, now) {
			batch = append(batch, m)
		}
	}
	sort.Slice(batch, func(i, j int) bool {
		if !batch[i].RefreshAt.Equal(batch[j].RefreshAt) {
			return batch[i].RefreshAt.Before(batch[j].RefreshAt)
		}
		return batch[i].ID < batch[j].ID
	})
	if len(batch) > limit {
		batch = batch[:limit]
	}
	for i := range batch {
		batch[i] = clone(batch[i])
	}
	b, err := fn(batch)
	if err != nil {
		return len(batch), err
	}
	return len(batch), s.commit(ctx, b)
}

// commit writes b once its BeforeCommitFunc, if any, succeeded; the caller
// holds s.mu.
func (s *Store) commit(ctx context.Context, b refresh.Batch) error {
	if b.BeforeCommitFunc != nil {
		if err := b.BeforeCommitFunc(ctx); err != nil {
			return err
		}
	}
	s.write(b)
	return nil
}

// NextDue returns the earliest refresh_at of a model that can become due.
func (s *Store) NextDue(context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, m := range s.models {
		if m.RefreshAt.IsZero() || (m.Paused && !m.Running()) {
			continue
		}
		if next.IsZero() || m.RefreshAt.Before(next) {
			next = m.RefreshAt
		}
	}
	return next, !next.IsZero(), nil
}

// TakeEvents passes up to about limit of the events written so far to fn
// and forgets them if it returns nil. A concurrent call gets
// refresh.ErrBusy.
func (s *Store) TakeEvents(_ context.Context, limit int, fn func([]refresh.Event) error) (int, error) {
	s.mu.Lock()
	if s.taking {
		s.mu.Unlock()
		return 0, refresh.ErrBusy
	}
	n := min(max(limit, 1), len(s.events))
	if n == 0 {
		s.mu.Unlock()
		return 0, nil
	}
	events := append([]refresh.Event(nil), s.events[:n]...)
	s.taking = true
	s.mu.Unlock()

	// fn runs without the lock, as it would outside a database
	// transaction: the loops may write meanwhile.
	err := fn(events)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taking = false
	if err != nil {
		return 0, err
	}
	s.events = s.events[n:]
	return n, nil
}

// write stores a batch; the caller holds s.mu.
func (s *Store) write(b refresh.Batch) {
	s.events = append(s.events, b.Events...)
	s.audit.add(b.Audit)
	for _, c := range b.Changes {
		if c.Delete {
			delete(s.models, c.Model.ID)
			delete(s.attempts, c.Model.ID)
			continue
		}
		s.models[c.Model.ID] = clone(c.Model)
		if c.Attempt == nil {
			continue
		}
		a := *c.Attempt
		list := s.attempts[a.ModelID]
		i := len(list) - 1
		for ; i >= 0 && list[i].UID != a.UID; i-- {
		}
		if i < 0 {
			s.attempts[a.ModelID] = append(list, a)
			continue
		}
		old := list[i]
		old.FinishedAt, old.Outcome, old.ErrorKind, old.ErrorMessage, old.Decision, old.Delay =
			a.FinishedAt, a.Outcome, a.ErrorKind, a.ErrorMessage, a.Decision, a.Delay
		list[i] = old
	}
}
