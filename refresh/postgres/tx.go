package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// conn is what write and its helpers send statements on.
type conn interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// db is the pool a Store sends its statements on. Every statement runs in
// a transaction that first sets the Session's settings for itself alone
// (settings, set_config(..., true), the same as SET LOCAL): nothing
// depends on the state of a server session, so the same statements run on
// a direct connection and through a pooler in transaction mode, where
// consecutive transactions of one client may run on different server
// sessions. Query, QueryRow and Exec send the settings and the statement
// in one round trip, as one implicit transaction; beginQuery and Begin
// send them after BEGIN.
type db struct {
	*pgxpool.Pool
	// settings is the statement that sets the Session's settings for the
	// current transaction, or "" if it sets none.
	settings string
}

// SetSession makes every transaction of the store set the timeouts of
// sess for itself, as Open does with its Session; call it before use, on
// a store of New (whose pool ParseConfig configured with sess).
func (s *Store) SetSession(sess Session) { s.pool.settings = sess.settingsSQL() }

// Query runs sql, with the settings, and returns its rows; closing them
// (or reading past the last) releases the connection.
func (d *db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if d.settings == "" {
		return d.Pool.Query(ctx, sql, args...)
	}
	br := d.Pool.SendBatch(ctx, d.batch(sql, args))
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is Query for one row, as pgx's QueryRow.
func (d *db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := d.Query(ctx, sql, args...)
	return &row{rows: rows, err: err}
}

// Exec runs sql, with the settings, and returns its command tag.
func (d *db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if d.settings == "" {
		return d.Pool.Exec(ctx, sql, args...)
	}
	br := d.Pool.SendBatch(ctx, d.batch(sql, args))
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Begin begins a transaction with the settings, for pgx.BeginFunc.
func (d *db) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := d.Pool.Begin(ctx)
	if err != nil || d.settings == "" {
		return tx, err
	}
	if _, err := tx.Exec(ctx, d.settings); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

// batch returns the settings and sql, to be sent together.
func (d *db) batch(sql string, args []any) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(d.settings)
	b.Queue(sql, args...)
	return b
}

// batchRows are the rows of the last statement of a batch: closing them
// closes the batch, which releases its connection.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// row is the first row of rows, as pgx's QueryRow returns it.
type row struct {
	rows pgx.Rows
	err  error
}

func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// tx is a transaction on a connection of the pool whose BEGIN (and
// settings) go to the server with its first query, and whose COMMIT may go
// with its last writes (write's commit): a pass takes two round trips
// rather than four.
type tx struct {
	*pgxpool.Conn
	ended bool
}

// rollbackTimeout bounds the ROLLBACK of a transaction whose caller's
// context has ended; a connection that cannot roll back is closed.
const rollbackTimeout = 5 * time.Second

// beginQuery acquires a connection, begins a transaction, sets the
// settings and runs the statements of first (each on its own, without
// arguments) and then query in it, in one round trip, passing query's rows
// to collect (which closes them). On error nothing is left open.
func (s *Store) beginQuery(ctx context.Context, first []string, collect func(pgx.Rows) error, query string, args ...any) (*tx, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	t := &tx{Conn: c}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if s.pool.settings != "" {
		first = append([]string{s.pool.settings}, first...)
	}
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
