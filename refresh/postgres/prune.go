package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/refresh"
)

// pruneByAge deletes up to $3 attempts of the models $1 that started
// before $2, found by the index on (model_id, started_at) and deleted by
// ctid (a TID scan, never a scan of the table).
const pruneByAge = `DELETE FROM attempts WHERE ctid = ANY(ARRAY(
		SELECT d.ctid FROM unnest($1::text[]) AS m(id) CROSS JOIN LATERAL (
			SELECT ctid FROM attempts a WHERE a.model_id = m.id AND a.started_at < $2 LIMIT $3
		) d LIMIT $3))`

// pruneByCount deletes up to $3 attempts of the models $1 beyond the $2
// newest of each (by started_at, then uid, as History orders them). For
// each model it reads from the index on (model_id, started_at) alone the
// start of the newest attempt past the kept ones (cut.started_at) and how
// many of the kept ones started at that instant (cut.kept). It deletes the
// attempts that started before, and of those that started at that instant
// all but the kept ones by uid: the only rows whose uid it reads from the
// table, usually one.
const pruneByCount = `WITH cut AS (
		SELECT m.id, c.started_at, $2 - (SELECT count(*) FROM attempts n
			WHERE n.model_id = m.id AND n.started_at > c.started_at) AS kept
		FROM unnest($1::text[]) AS m(id)
		CROSS JOIN LATERAL (
			SELECT started_at FROM attempts a WHERE a.model_id = m.id
			ORDER BY a.started_at DESC OFFSET $2 LIMIT 1
		) c
	)
	DELETE FROM attempts WHERE ctid = ANY(ARRAY(
		SELECT d.ctid FROM cut CROSS JOIN LATERAL (
			SELECT ctid FROM attempts a WHERE a.model_id = cut.id AND a.started_at < cut.started_at
			UNION ALL
			(SELECT ctid FROM attempts a WHERE a.model_id = cut.id AND a.started_at = cut.started_at
				ORDER BY a.uid DESC OFFSET cut.kept)
			LIMIT $3
		) d LIMIT $3))`

// PruneHistory deletes the attempts r asks for in one transaction, which
// first takes a transaction-scoped advisory lock: while another caller
// holds it, PruneHistory answers Busy at once. Both rules look at the
// r.Models models after r.After, each through the index on (model_id,
// started_at), and each deletes at most r.Limit rows, by ctid, so the
// transaction holds few row locks and no table lock beyond the ordinary
// one of a DELETE.
func (s *Store) PruneHistory(ctx context.Context, r refresh.PruneRequest) (refresh.PruneResult, error) {
	var res refresh.PruneResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		mine := false
		err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.freshen_prune'))`).Scan(&mine)
		if err != nil || !mine {
			res.Busy = !mine
			return err
		}
		if r.Before.IsZero() && r.Keep <= 0 {
			res.Done = true
			return nil
		}
		rows, _ := tx.Query(ctx, `SELECT id FROM models WHERE id > $1 ORDER BY id LIMIT $2`, r.After, r.Models)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			res.Done = true
			return nil
		}
		if !r.Before.IsZero() {
			tag, err := tx.Exec(ctx, pruneByAge, ids, r.Before, r.Limit)
			if err != nil {
				return err
			}
			res.ByAge = int(tag.RowsAffected())
		}
		if r.Keep > 0 {
			tag, err := tx.Exec(ctx, pruneByCount, ids, r.Keep, r.Limit)
			if err != nil {
				return err
			}
			res.ByCount = int(tag.RowsAffected())
		}
		switch {
		case res.ByAge == r.Limit || res.ByCount == r.Limit:
			res.Next = r.After
		case len(ids) == r.Models:
			res.Next = ids[len(ids)-1]
		default:
			res.Done = true
		}
		return nil
	})
	if err != nil {
		return refresh.PruneResult{}, storeError("prune history", err)
	}
	return res, nil
}

// stateCounts are the columns that count models by state, as
// refresh.ModelCounts.Add does: each model in one state, by precedence,
// and apart, the overdue ones and those waiting for a slot. stateCountsDest
// gives their destinations.
const stateCounts = `
	count(*) FILTER (WHERE disabled_at IS NOT NULL),
	count(*) FILTER (WHERE disabled_at IS NULL AND paused),
	count(*) FILTER (WHERE disabled_at IS NULL AND NOT paused AND attempt_uid IS NOT NULL),
	count(*) FILTER (WHERE disabled_at IS NULL AND NOT paused AND attempt_uid IS NULL AND consecutive_failures > 0),
	count(*) FILTER (WHERE disabled_at IS NULL AND NOT paused AND attempt_uid IS NULL AND consecutive_failures = 0),
	count(*) FILTER (WHERE overdue_since IS NOT NULL),
	count(*) FILTER (WHERE waiting_for_slot)`

// stateCountsDest returns where the columns of stateCounts are scanned.
func stateCountsDest(c *refresh.ModelCounts) []any {
	return []any{&c.Disabled, &c.Paused, &c.Running, &c.Failing, &c.Idle, &c.Overdue, &c.WaitingForSlot}
}

// CountModels counts the models by state (see refresh.ModelCounts),
// overall and for the maxQueues queues with the most models, in one query
// (one scan of models).
func (s *Store) CountModels(ctx context.Context, maxQueues int) (refresh.ModelCounts, map[string]refresh.ModelCounts, error) {
	var all refresh.ModelCounts
	byQueue := map[string]refresh.ModelCounts{}
	rows, _ := s.pool.Query(ctx, `SELECT GROUPING(queue) = 1, coalesce(queue, ''), `+stateCounts+`
		FROM models GROUP BY GROUPING SETS ((), (queue))
		ORDER BY GROUPING(queue) DESC, count(*) DESC, queue
		LIMIT $1`, maxQueues+1)
	defer rows.Close()
	for rows.Next() {
		var total bool
		var q string
		var c refresh.ModelCounts
		if err := rows.Scan(append([]any{&total, &q}, stateCountsDest(&c)...)...); err != nil {
			return all, nil, storeError("count models", err)
		}
		if total {
			all = c
		} else {
			byQueue[q] = c
		}
	}
	if err := rows.Err(); err != nil {
		return all, nil, storeError("count models", err)
	}
	return all, byQueue, nil
}
