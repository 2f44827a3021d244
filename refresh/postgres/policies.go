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
// so writes that name a policy wait for it (one scan of models).
func (s *Store) PrunePolicies(ctx context.Context, now time.Time) (int, error) {
	var deleted int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.freshen_policies'))`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, prunePolicies, now.Add(-PolicyGrace), now).Scan(&deleted)
	})
	if err != nil {
		return 0, storeError("prune policies", err)
	}
	return deleted, nil
}
