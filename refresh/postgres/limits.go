package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/freshen-dev/freshen/refresh"
)

// slotCacheFor is how long ClaimDue trusts what it read of whether limits
// exist or models wait for a slot: a pass reads it at most that often, so
// that a database without limits costs the scheduler nothing more.
const slotCacheFor = time.Second

// forgetful is a value read from the database that a write of what it
// was read from forgets (see forgetSlots): a read begun before the forget,
// which may have missed that write, is not kept.
type forgetful[T any] struct {
	mu      sync.Mutex
	v       T
	forgets uint64
}

// get returns the value and how many forgets came before it: pass them to
// set with what a read begun now finds.
func (c *forgetful[T]) get() (T, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v, c.forgets
}

// set keeps v, read after forgets forgets, unless a forget came since.
func (c *forgetful[T]) set(forgets uint64, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forgets == forgets {
		c.v = v
	}
}

// forget resets the value to its zero.
func (c *forgetful[T]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero T
	c.v = zero
	c.forgets++
}

// slotRead is what ClaimDue last read of whether limits exist or models
// wait for a slot.
type slotRead struct {
	at      time.Time // by the caller's clock; zero: never read
	limited bool
}

// fresh reports whether r was read less than slotCacheFor before now.
func (r slotRead) fresh(now time.Time) bool {
	return !r.at.IsZero() && now.Sub(r.at) < slotCacheFor && !now.Before(r.at)
}

// limited reports whether limits exist or a model waits for a slot, read
// on t at most once per slotCacheFor of now.
func (s *Store) limited(ctx context.Context, t conn, now time.Time) (bool, error) {
	last, forgets := s.slots.get()
	if last.fresh(now) {
		return last.limited, nil
	}
	rows, err := t.Query(ctx, `SELECT EXISTS (SELECT FROM limits) OR EXISTS (SELECT FROM models WHERE waiting_for_slot)`)
	if err != nil {
		return false, err
	}
	limited, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return false, err
	}
	s.slots.set(forgets, slotRead{at: now, limited: limited})
	return limited, nil
}

// forgetSlots makes the next pass read the limits again.
func (s *Store) forgetSlots() {
	s.slots.forget()
	s.held.forget()
}

// limitColumns are the columns of limits that a Limit is read from, in
// the order of scanLimit.
const limitColumns = `kind, key, coalesce(max_running, 0), coalesce(max_starts, 0), coalesce(per, 0), coalesce(burst, 0)`

// limitRow is what one row of limitColumns is scanned into.
type limitRow struct {
	l   refresh.Limit
	per int64 // microseconds
}

func (r *limitRow) dest() []any {
	return []any{&r.l.Kind, &r.l.Key, &r.l.MaxRunning, &r.l.MaxStarts, &r.per, &r.l.Burst}
}

func (r *limitRow) limit() refresh.Limit {
	l := r.l
	l.Per = refresh.Duration(time.Duration(r.per) * time.Microsecond)
	return l
}

// nullInt is n, NULL if 0.
func nullInt(n int64) pgtype.Int8 { return pgtype.Int8{Int64: n, Valid: n != 0} }

// Limits returns the limits by kind then key.
func (s *Store) Limits(ctx context.Context) ([]refresh.Limit, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+limitColumns+` FROM limits ORDER BY kind, key`)
	if err != nil {
		return nil, storeError("list limits", err)
	}
	var r limitRow
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refresh.Limit, error) {
		err := row.Scan(r.dest()...)
		return r.limit(), err
	})
	if err != nil {
		return nil, storeError("list limits", err)
	}
	return out, nil
}

// PutLimit creates or replaces l; with onlyNew it keeps an existing limit
// of the same kind and key and reports false. A limit replaced by one
// without max_starts loses its log of starts; one that keeps max_starts
// keeps it, so that the starts made under the old rate count under the
// new one.
func (s *Store) PutLimit(ctx context.Context, l refresh.Limit, onlyNew bool) (bool, error) {
	if err := refresh.CheckLimit(l); err != nil {
		return false, err
	}
	conflict := `DO UPDATE SET max_running = excluded.max_running, max_starts = excluded.max_starts,
		per = excluded.per, burst = excluded.burst`
	if onlyNew {
		conflict = `DO NOTHING`
	}
	tag, err := s.pool.Exec(ctx, `WITH put AS (
			INSERT INTO limits (kind, key, max_running, max_starts, per, burst) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (kind, key) `+conflict+`
			RETURNING kind, key, max_starts
		), unlog AS (
			DELETE FROM limit_starts s USING put WHERE put.max_starts IS NULL AND s.kind = put.kind AND s.key = put.key
		)
		SELECT FROM put`, l.Kind, l.Key, nullInt(int64(l.MaxRunning)), nullInt(int64(l.MaxStarts)),
		nullInt(time.Duration(l.Per).Microseconds()), nullInt(int64(l.Burst)))
	if err != nil {
		return false, storeError(fmt.Sprintf("put limit %s %q", l.Kind, l.Key), err)
	}
	s.forgetSlots()
	return tag.RowsAffected() > 0, nil
}

// DeleteLimit removes the limit of kind and key, with its log of starts,
// or returns an *refresh.Error with code ENOTFOUND.
func (s *Store) DeleteLimit(ctx context.Context, kind, key string) error {
	tag, err := s.pool.Exec(ctx, `WITH unlog AS (DELETE FROM limit_starts WHERE kind = $1 AND key = $2)
		DELETE FROM limits WHERE kind = $1 AND key = $2`, kind, key)
	if err != nil {
		return storeError(fmt.Sprintf("delete limit %s %q", kind, key), err)
	}
	s.forgetSlots()
	if tag.RowsAffected() == 0 {
		return refresh.Errorf(refresh.ENOTFOUND, "limit %s %q not found", kind, key)
	}
	return nil
}

// Dependents returns the upstreams of the models whose upstreams name one
// of ids, by model id, through the GIN index models_upstreams.
func (s *Store) Dependents(ctx context.Context, ids []string) (map[string][]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, upstreams FROM models WHERE upstreams && $1::text[]`, ids)
	if err != nil {
		return nil, storeError("find dependents", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id string
		var ups []string
		if err := rows.Scan(&id, &ups); err != nil {
			return nil, storeError("find dependents", err)
		}
		out[id] = ups
	}
	if err := rows.Err(); err != nil {
		return nil, storeError("find dependents", err)
	}
	return out, nil
}

// Upstreams returns the upstream views of the models among ids that exist.
func (s *Store) Upstreams(ctx context.Context, ids []string) (map[string]refresh.Upstream, error) {
	out := make(map[string]refresh.Upstream, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, last_changed_at, disabled_at IS NOT NULL, disabled_reason, paused
		FROM models WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, storeError("read upstreams", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u refresh.Upstream
		var changed *time.Time
		var reason *string
		if err := rows.Scan(&u.ID, &changed, &u.Disabled, &reason, &u.Paused); err != nil {
			return nil, storeError("read upstreams", err)
		}
		u.LastChangedAt, u.DisabledReason = fromNullTime(changed), fromNullString(reason)
		out[u.ID] = u
	}
	if err := rows.Err(); err != nil {
		return nil, storeError("read upstreams", err)
	}
	return out, nil
}

// upstreamLock serializes the writes of upstreams, so that two writes
// cannot each close half of a cycle.
const upstreamLock = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.freshen_upstreams'))`

// upstreamGraph reads the upstreams of the models reachable from ids.
const upstreamGraph = `WITH RECURSIVE reach(id) AS (
		SELECT unnest($1::text[])
		UNION
		SELECT unnest(m.upstreams) FROM models m JOIN reach r ON m.id = r.id
	)
	SELECT m.id, m.upstreams FROM models m JOIN reach r ON m.id = r.id WHERE m.upstreams IS NOT NULL`

// checkCycles refuses, with the *refresh.ValidationError of
// refresh.CheckUpstreamCycle, the changes of written that set upstreams
// which would close a cycle. It takes the upstreams lock first, so that
// the graph it reads holds every committed write of upstreams.
func checkCycles(ctx context.Context, t conn, written []*refresh.Model) error {
	var from []string
	for _, m := range written {
		from = append(from, m.Upstreams...)
	}
	b := &pgx.Batch{}
	b.Queue(upstreamLock)
	b.Queue(upstreamGraph, from)
	res := t.SendBatch(ctx, b)
	graph := map[string][]string{}
	_, err := res.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = res.Query(); err == nil {
			for rows.Next() {
				var id string
				var ups []string
				if err = rows.Scan(&id, &ups); err != nil {
					break
				}
				graph[id] = ups
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read the upstreams graph: %w", err)
	}
	for _, m := range written {
		graph[m.ID] = m.Upstreams
	}
	for _, m := range written {
		if err := refresh.CheckUpstreamCycle(m.ID, m.Upstreams, graph); err != nil {
			return err
		}
	}
	return nil
}
