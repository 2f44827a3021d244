package memory

import (
	"context"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Sessions keeps the dashboard's sessions in process memory, for a
// dashboard that runs alone (the embedded demo, tests); several instances
// share theirs in PostgreSQL (refresh/postgres). Its methods are those of
// the dashboard's SessionStore.
type Sessions struct {
	mu     sync.Mutex
	byHash map[string]refresh.Session
}

// NewSessions returns an empty session table.
func NewSessions() *Sessions { return &Sessions{byHash: map[string]refresh.Session{}} }

// CreateSession keeps s, and forgets the sessions expired at now.
func (t *Sessions) CreateSession(_ context.Context, s refresh.Session, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for h, old := range t.byHash {
		if !old.ExpiresAt.After(now) {
			delete(t.byHash, h)
		}
	}
	t.byHash[s.Hash] = s
	return nil
}

// Session returns the session whose id hashes to hash if it has not
// expired at now, else an error with code ENOTFOUND.
func (t *Sessions) Session(_ context.Context, hash string, now time.Time) (refresh.Session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.byHash[hash]
	if !ok || !s.ExpiresAt.After(now) {
		return refresh.Session{}, refresh.Errorf(refresh.ENOTFOUND, "no such session")
	}
	return s, nil
}

// DeleteSession forgets the session whose id hashes to hash, if any.
func (t *Sessions) DeleteSession(_ context.Context, hash string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byHash, hash)
	return nil
}
