package memory

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/freshen-dev/freshen/refresh"
)

var _ refresh.AuditLog = (*Store)(nil)

// auditLog keeps audit entries by model id, in the order written; the
// Store's mutex guards it.
type auditLog struct {
	last    int64
	byModel map[string][]refresh.AuditEntry
}

// add numbers and keeps entries.
func (l *auditLog) add(entries []refresh.AuditEntry) {
	if len(entries) == 0 {
		return
	}
	if l.byModel == nil {
		l.byModel = map[string][]refresh.AuditEntry{}
	}
	for _, e := range entries {
		l.last++
		e.ID = l.last
		e.Changes = slices.Clone(e.Changes)
		for i := range e.Changes {
			c := &e.Changes[i]
			c.Before = append(json.RawMessage(nil), c.Before...)
			c.After = append(json.RawMessage(nil), c.After...)
		}
		l.byModel[e.ModelID] = append(l.byModel[e.ModelID], e)
	}
}

// Audit returns the audit entries of model id, newest first (by At, then
// by ID), at most limit (all when limit <= 0), older than the entry
// before (0: from the newest).
func (s *Store) Audit(_ context.Context, id string, before int64, limit int) ([]refresh.AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := slices.Clone(s.audit.byModel[id])
	newer := func(a, b refresh.AuditEntry) bool {
		if !a.At.Equal(b.At) {
			return a.At.After(b.At)
		}
		return a.ID > b.ID
	}
	slices.SortFunc(all, func(a, b refresh.AuditEntry) int {
		if newer(a, b) {
			return -1
		}
		return 1
	})
	if before > 0 {
		i := slices.IndexFunc(all, func(e refresh.AuditEntry) bool { return e.ID == before })
		if i < 0 {
			return nil, nil
		}
		all = all[i+1:]
	}
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}
