package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// conn is what write and its helpers send statements on.
type conn interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// tx is a transaction on a connection of the pool whose BEGIN goes to the
// server with its first query, and whose COMMIT may go with its last
// writes (write's commit): a pass takes two round trips rather than four.
type tx struct {
	*pgxpool.Conn
	ended bool
}

// rollbackTimeout bounds the ROLLBACK of a transaction whose caller's
// context has ended; a connection that cannot roll back is closed.
const rollbackTimeout = 5 * time.Second

// beginQuery acquires a connection, begins a transaction and runs the
// statements of first (each on its own, without arguments) and then query
// in it, in one round trip, passing query's rows to collect (which closes
// them). On error nothing is left open.
func (s *Store) beginQuery(ctx context.Context, first []string, collect func(pgx.Rows) error, query string, args ...any) (*tx, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	t := &tx{Conn: c}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for _, f := range first {
		b.Queue(f)
	}
	b.Queue(query, args...)
	br := t.SendBatch(ctx, b)
	for range 1 + len(first) {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			err = collect(rows)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.rollback()
		return nil, err
	}
	return t, nil
}

// commit commits the transaction, unless write did with its writes.
func (t *tx) commit(ctx context.Context) error {
	if t.ended {
		return nil
	}
	t.ended = true
	if _, err := t.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollback ends the transaction, if it is open, and releases the
// connection.
func (t *tx) rollback() {
	if !t.ended {
		t.ended = true
		ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		_, _ = t.Exec(ctx, "ROLLBACK") // a connection left in a transaction is closed on release
		cancel()
	}
	t.Release()
}
