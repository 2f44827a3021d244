package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/refresh"
)

// slotCacheFor is how long ClaimDue trusts what it read of the limits and
// of the waiting models: a pass reads them at most that often, so that a
// database without limits costs the scheduler nothing more.
const slotCacheFor = time.Second

// slotCache is what ClaimDue last read of the limits.
type slotCache struct {
	mu   sync.Mutex
	at   time.Time // by the caller's clock; zero: stale
	last slotInfo
}

// slotInfo is the limits and whether a model waits for a slot.
type slotInfo struct {
	limits  []refresh.Limit
	waiting bool
}

// slotState returns the limits and whether a model waits for a slot, read
// on t at most once per slotCacheFor of now.
func (s *Store) slotState(ctx context.Context, t conn, now time.Time) (slotInfo, error) {
	c := &s.slots
	c.mu.Lock()
	at, last := c.at, c.last
	c.mu.Unlock()
	if !at.IsZero() && now.Sub(at) < slotCacheFor && !now.Before(at) {
		return last, nil
	}
	var info slotInfo
	rows, err := t.Query(ctx, `SELECT l.kind, l.key, l.max_running, w.waiting
		FROM (SELECT EXISTS (SELECT FROM models WHERE waiting_for_slot) AS waiting) w
		LEFT JOIN limits l ON true
		ORDER BY l.kind, l.key`)
	if err != nil {
		return slotInfo{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, key *string
		var maxRunning *int
		if err := rows.Scan(&kind, &key, &maxRunning, &info.waiting); err != nil {
			return slotInfo{}, err
		}
		if kind != nil {
			info.limits = append(info.limits, refresh.Limit{Kind: *kind, Key: *key, MaxRunning: *maxRunning})
		}
	}
	if err := rows.Err(); err != nil {
		return slotInfo{}, err
	}
	c.mu.Lock()
	c.at, c.last = now, info
	c.mu.Unlock()
	return info, nil
}

// forgetSlots makes the next pass read the limits again.
func (s *Store) forgetSlots() {
	s.slots.mu.Lock()
	s.slots.at = time.Time{}
	s.slots.mu.Unlock()
}

// Limits returns the concurrency limits by kind then key.
func (s *Store) Limits(ctx context.Context) ([]refresh.Limit, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, key, max_running FROM limits ORDER BY kind, key`)
	if err != nil {
		return nil, storeError("list limits", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (refresh.Limit, error) {
		var l refresh.Limit
		err := r.Scan(&l.Kind, &l.Key, &l.MaxRunning)
		return l, err
	})
	if err != nil {
		return nil, storeError("list limits", err)
	}
	return out, nil
}

// PutLimit creates or replaces l; with onlyNew it keeps an existing limit
// of the same kind and key and reports false.
func (s *Store) PutLimit(ctx context.Context, l refresh.Limit, onlyNew bool) (bool, error) {
	if err := refresh.CheckLimit(l); err != nil {
		return false, err
	}
	conflict := `DO UPDATE SET max_running = excluded.max_running`
	if onlyNew {
		conflict = `DO NOTHING`
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO limits (kind, key, max_running) VALUES ($1, $2, $3)
		ON CONFLICT (kind, key) `+conflict, l.Kind, l.Key, l.MaxRunning)
	if err != nil {
		return false, storeError(fmt.Sprintf("put limit %s %q", l.Kind, l.Key), err)
	}
	s.forgetSlots()
	return tag.RowsAffected() > 0, nil
}

// DeleteLimit removes the limit of kind and key, or returns an
// *refresh.Error with code ENOTFOUND.
func (s *Store) DeleteLimit(ctx context.Context, kind, key string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM limits WHERE kind = $1 AND key = $2`, kind, key)
	if err != nil {
		return storeError(fmt.Sprintf("delete limit %s %q", kind, key), err)
	}
	s.forgetSlots()
	if tag.RowsAffected() == 0 {
		return refresh.Errorf(refresh.ENOTFOUND, "limit %s %q not found", kind, key)
	}
	return nil
}

// Counts counts the overdue models and those waiting for a slot, through
// their partial indexes.
func (s *Store) Counts(ctx context.Context) (refresh.Counts, error) {
	var c refresh.Counts
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM models WHERE overdue_since IS NOT NULL),
		(SELECT count(*) FROM models WHERE waiting_for_slot)`).Scan(&c.Overdue, &c.WaitingForSlot)
	if err != nil {
		return refresh.Counts{}, storeError("count overdue and waiting models", err)
	}
	return c, nil
}

// Dependents returns the ids of the models whose upstreams name one of
// ids, in id order, through the GIN index models_upstreams.
func (s *Store) Dependents(ctx context.Context, ids []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM models WHERE upstreams && $1::text[] ORDER BY id`, ids)
	if err != nil {
		return nil, storeError("find dependents", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
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
