package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// PolicyGrace is how long a policy no model uses stays stored before
// PrunePolicies deletes it: longer than any read of a model and its
// policy takes.
const PolicyGrace = time.Minute

// prunePolicies marks the policies no model uses with $2 (now), clears the
// mark of those used again, and deletes those marked at or before $1 and
// still unused, with one scan of models (data-modifying WITH queries run
// whether or not their rows are read). It answers how many it deleted.
const prunePolicies = `WITH used AS MATERIALIZED (SELECT DISTINCT policy_id AS id FROM models),
	kept AS (
		UPDATE policies SET orphaned_at = NULL
		WHERE orphaned_at IS NOT NULL AND id IN (SELECT id FROM used) RETURNING id
	),
	gone AS (
		DELETE FROM policies
		WHERE orphaned_at <= $1 AND id NOT IN (SELECT id FROM used) RETURNING id
	),
	marked AS (
		UPDATE policies SET orphaned_at = $2
		WHERE orphaned_at IS NULL AND id NOT IN (SELECT id FROM used) RETURNING id
	)
	SELECT count(*) FROM gone`

// PrunePolicies deletes the stored policies that no model has used since
// a pass at least PolicyGrace before now, and marks those unused now for a
// later pass. It holds the advisory lock that freshen_policy_id shares,
// so writes that name a policy wait for it (one scan of models). It scans
// only when a policy may have been left unused since this store's last
// pass (the count policies_released has moved: a model deleted, a policy
// changed or added) or while policies are marked; else it returns at once.
func (s *Store) PrunePolicies(ctx context.Context, now time.Time) (int, error) {
	var deleted int
	var count int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.freshen_policies'))`); err != nil {
			return err
		}
		var marked bool
		if err := tx.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END,
			EXISTS (SELECT FROM policies WHERE orphaned_at IS NOT NULL) FROM policies_released`).Scan(&count, &marked); err != nil {
			return err
		}
		if seen := s.released.Load(); !marked && seen != nil && *seen == count {
			return nil
		}
		return tx.QueryRow(ctx, prunePolicies, now.Add(-PolicyGrace), now).Scan(&deleted)
	})
	if err != nil {
		return 0, storeError("prune policies", err)
	}
	s.released.Store(&count)
	return deleted, nil
}
