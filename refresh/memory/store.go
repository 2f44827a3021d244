// Package memory implements refresh.Store and the refresh queue interfaces
// in process memory. It backs the simulator, the embedded demo and tests;
// production uses refresh/postgres and queue.
package memory

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
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
	names    refresh.EventNames           // the names subscribed (SetEvents)
	taking   bool                         // a TakeEvents call is running
	audit    auditLog                     // audit entries, kept after their model
	limits   map[[2]string]refresh.Limit  // by kind and key
	rates    rateLogs                     // the logs of the rate limits
	turns    turns                        // the turns of the limits
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		models: map[string]refresh.Model{}, attempts: map[string][]refresh.Attempt{},
		limits: map[[2]string]refresh.Limit{}, rates: rateLogs{}, turns: turns{},
	}
}

// clone returns a copy of m that shares no mutable memory with the store
// (policies are never changed in place).
func clone(m refresh.Model) refresh.Model {
	m.Payload = append(json.RawMessage(nil), m.Payload...)
	m.Upstreams = slices.Clone(m.Upstreams)
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
		(f.Queue == "" || f.Queue == m.Queue) && m.ID > f.After &&
		strings.HasPrefix(m.ID, f.Prefix) && (f.Until == "" || m.ID <= f.Until)
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
			if f.NoPayload {
				m.Payload = nil
			}
			out = append(out, clone(m))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if len(out) > limit {
		out = out[:limit]
	}
	if f.BoundPayloads {
		budget := refresh.NewPayloadBudget()
		for i, m := range out {
			if !budget.Take(len(m.Payload)) {
				return out[:i+1], nil // ends with the model that does not fit
			}
		}
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

// TryModify is Modify without payloads (see refresh.Store): no other
// caller can hold a model while it runs, so no model is ever busy.
func (s *Store) TryModify(ctx context.Context, ids []string, fn func([]refresh.Model, []string) (refresh.Batch, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := s.find(ids)
	for i := range found {
		found[i].Payload = nil
	}
	b, err := fn(found, nil)
	if err != nil {
		return err
	}
	// The stored payloads stay; the caller's slice stays as it was.
	b.Changes = slices.Clone(b.Changes)
	for i, c := range b.Changes {
		if old, ok := s.models[c.Model.ID]; ok {
			b.Changes[i].Model.Payload = old.Payload
		}
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
	at := m.DueAt()
	return !at.IsZero() && !at.After(now)
}

// ClaimDue passes to fn up to limit due models that do not wait for a
// slot, by DueAt then id, and, while limits exist or models wait, the
// waiting models that may start (as the postgres store chooses them: for
// each limit with free slots and starts, that many of the models waiting
// for it, in the fair turns of their tenants (refresh.FairOrder by
// waiting_tenant after the limit's turn: by rank within the tenant, the
// tenants in turn, refresh_at, then id); the models waiting for a limit
// that no longer exists, up to limit; and the first waiting models in
// that order, as many as the batch has room for), with the limits that
// cover them, the rate limits' logs and the limits' turns, and writes its
// changes.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, limit int, fn func([]refresh.Model, refresh.Slots) (refresh.Batch, error)) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var batch, waiting []refresh.Model
	for _, m := range s.models {
		switch {
		case !due(m, now):
		case m.WaitingForSlot:
			waiting = append(waiting, m)
		default:
			batch = append(batch, m)
		}
	}
	slices.SortFunc(batch, func(a, b refresh.Model) int {
		if c := a.DueAt().Compare(b.DueAt()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(batch) > limit {
		batch = batch[:limit]
	}
	var slots refresh.Slots
	if len(s.limits) > 0 || len(waiting) > 0 {
		slots, batch = s.claimForSlots(batch, waiting, limit, now)
	}
	budget := refresh.NewPayloadBudget()
	for i, m := range batch {
		if !budget.Take(len(m.Payload)) {
			batch = batch[:i]
			break
		}
	}
	for i := range batch {
		batch[i] = clone(batch[i])
	}
	b, err := fn(batch, slots)
	if err != nil {
		return len(batch), err
	}
	return len(batch), s.commit(ctx, b)
}

// claimForSlots returns batch with the waiting models that may take a
// slot added (see ClaimDue), and the limits that cover a model of the
// result or that a model waits for, with their current attempts; the
// caller holds s.mu.
func (s *Store) claimForSlots(batch, waiting []refresh.Model, limit int, now time.Time) (refresh.Slots, []refresh.Model) {
	limits := s.sortedLimits()
	exists := map[string]bool{}
	for _, l := range limits {
		exists[l.Name()] = true
	}
	waitedFor := map[string]bool{}
	for _, m := range waiting {
		waitedFor[m.WaitingLimit] = true
	}
	refresh.FairOrder(waiting, func(m refresh.Model) string { return m.WaitingTenant },
		func(m refresh.Model) string { return s.turns[m.WaitingLimit] })
	var slots refresh.Slots
	for _, l := range limits {
		if l.Kind == refresh.LimitPrefix {
			slots.Tenants = append(slots.Tenants, l.Key)
		}
	}
	counted := map[string]bool{}
	count := func(l refresh.Limit) int {
		running := 0
		for _, m := range s.models {
			if m.Running() && l.Covers(m) {
				running++
			}
		}
		counted[l.Name()] = true
		slots.Limits = append(slots.Limits, l)
		slots.Running = append(slots.Running, running)
		slots.Rates = append(slots.Rates, s.rates.window(l, now))
		slots.Turns = append(slots.Turns, s.turns[l.Name()])
		return running
	}
	taken := map[string]bool{}
	for _, l := range limits {
		if !waitedFor[l.Name()] && !slices.ContainsFunc(batch, l.Covers) {
			continue
		}
		running := count(l)
		free := len(waiting)
		if l.Concurrent() {
			free = l.MaxRunning - running
		}
		if l.Rated() {
			starts, _ := l.Admits(slots.Rates[len(slots.Rates)-1], now)
			free = min(free, starts)
		}
		for _, m := range waiting {
			if free <= 0 {
				break
			}
			if m.WaitingLimit == l.Name() {
				taken[m.ID] = true
				free--
			}
		}
	}
	orphans := 0
	for _, m := range waiting {
		if !exists[m.WaitingLimit] && orphans < limit {
			taken[m.ID] = true
			orphans++
		}
	}
	for _, m := range waiting[:min(max(limit-len(batch), 0), len(waiting))] {
		taken[m.ID] = true
	}
	for _, m := range waiting {
		if taken[m.ID] {
			batch = append(batch, m)
		}
	}
	// The limits that cover a waiting model taken but were not counted.
	for _, l := range limits {
		if !counted[l.Name()] && slices.ContainsFunc(batch, l.Covers) {
			count(l)
		}
	}
	return slots, batch
}

// sortedLimits returns the limits by kind then key; the caller holds s.mu.
func (s *Store) sortedLimits() []refresh.Limit {
	out := make([]refresh.Limit, 0, len(s.limits))
	for _, l := range s.limits {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Dependents returns the upstreams of the models whose upstreams name one
// of ids, by model id.
func (s *Store) Dependents(_ context.Context, ids []string) (map[string][]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for id, m := range s.models {
		for _, u := range m.Upstreams {
			if slices.Contains(ids, u) {
				out[id] = slices.Clone(m.Upstreams)
				break
			}
		}
	}
	return out, nil
}

// Upstreams returns the upstream views of the models among ids that
// exist.
func (s *Store) Upstreams(_ context.Context, ids []string) (map[string]refresh.Upstream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]refresh.Upstream, len(ids))
	for _, id := range ids {
		if m, ok := s.models[id]; ok {
			out[id] = refresh.UpstreamOf(m)
		}
	}
	return out, nil
}

// Limits returns the concurrency limits by kind then key.
func (s *Store) Limits(context.Context) ([]refresh.Limit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedLimits(), nil
}

// PutLimit creates or replaces l (with onlyNew, only creates it).
func (s *Store) PutLimit(_ context.Context, l refresh.Limit, onlyNew bool) (bool, error) {
	if err := refresh.CheckLimit(l); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{l.Kind, l.Key}
	if _, ok := s.limits[k]; ok && onlyNew {
		return false, nil
	}
	s.limits[k] = l
	return true, nil
}

// DeleteLimit removes the limit of kind and key.
func (s *Store) DeleteLimit(_ context.Context, kind, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{kind, key}
	if _, ok := s.limits[k]; !ok {
		return refresh.Errorf(refresh.ENOTFOUND, "limit %s %q not found", kind, key)
	}
	delete(s.limits, k)
	s.rates.drop(refresh.Limit{Kind: kind, Key: key})
	delete(s.turns, refresh.Limit{Kind: kind, Key: key}.Name())
	return nil
}

// commit writes b once its BeforeCommitFunc, if any, succeeded; the caller
// holds s.mu.
func (s *Store) commit(ctx context.Context, b refresh.Batch) error {
	if err := s.checkCycles(b); err != nil {
		return err
	}
	if b.BeforeCommitFunc != nil {
		if err := b.BeforeCommitFunc(ctx); err != nil {
			return err
		}
	}
	s.write(b)
	return nil
}

// checkCycles refuses a batch whose upstreams would close a cycle
// (refresh.CheckUpstreamCycle); the caller holds s.mu.
func (s *Store) checkCycles(b refresh.Batch) error {
	var graph map[string][]string
	for _, c := range b.Changes {
		if c.Delete || len(c.Model.Upstreams) == 0 {
			continue
		}
		if old, ok := s.models[c.Model.ID]; ok && slices.Equal(old.Upstreams, c.Model.Upstreams) {
			continue
		}
		if graph == nil {
			graph = make(map[string][]string, len(s.models))
			for id, m := range s.models {
				if len(m.Upstreams) > 0 {
					graph[id] = m.Upstreams
				}
			}
			for _, c := range b.Changes {
				if c.Delete {
					delete(graph, c.Model.ID)
				} else {
					graph[c.Model.ID] = c.Model.Upstreams
				}
			}
		}
		if err := refresh.CheckUpstreamCycle(c.Model.ID, c.Model.Upstreams, graph); err != nil {
			return err
		}
	}
	return nil
}

// NextDue returns the earliest DueAt of a model that can become due and
// does not wait for a slot.
func (s *Store) NextDue(context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, m := range s.models {
		at := m.DueAt()
		if at.IsZero() || m.WaitingForSlot {
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
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
	s.audit.add(b.Audit)
	s.rates.add(s.limits, b.Starts)
	s.turns.add(s.limits, b.Starts)
	defer s.keepEvents(b.Events) // after the models, whose dependents it reads
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
