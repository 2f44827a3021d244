package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/refresh"
)

// The dashboard's sessions live in dashboard_sessions
// (migrations/012_sessions.sql), so that every instance knows every
// session: a sign-out on one ends the session on all.

// CreateSession stores s and deletes the sessions expired at now, in one
// transaction.
func (s *Store) CreateSession(ctx context.Context, sess refresh.Session, now time.Time) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return storeError("create session", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `DELETE FROM dashboard_sessions WHERE expires_at <= $1`, now); err != nil {
		return storeError("prune expired sessions", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO dashboard_sessions (id_hash, token_hash, token_name, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, sess.Hash, sess.TokenHash, sess.TokenName, sess.CreatedAt, sess.ExpiresAt)
	if err != nil {
		return storeError("create session", err)
	}
	return storeError("create session", tx.Commit(ctx))
}

// Session returns the session whose id hashes to hash if it has not
// expired at now, else an error with code ENOTFOUND.
func (s *Store) Session(ctx context.Context, hash string, now time.Time) (refresh.Session, error) {
	sess := refresh.Session{Hash: hash}
	err := s.pool.QueryRow(ctx, `SELECT token_hash, token_name, created_at, expires_at FROM dashboard_sessions
		WHERE id_hash = $1 AND expires_at > $2`, hash, now).Scan(&sess.TokenHash, &sess.TokenName, &sess.CreatedAt, &sess.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return refresh.Session{}, refresh.Errorf(refresh.ENOTFOUND, "no such session")
	}
	if err != nil {
		return refresh.Session{}, storeError("read session", err)
	}
	return sess, nil
}

// DeleteSession deletes the session whose id hashes to hash, if any.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM dashboard_sessions WHERE id_hash = $1`, hash)
	return storeError("delete session", err)
}
