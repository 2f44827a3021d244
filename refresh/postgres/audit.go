package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/refresh"
)

var _ refresh.AuditLog = (*Store)(nil)

// insertAudit adds the audit entries of a batch, in order.
const insertAudit = `INSERT INTO audit (model_id, at, actor, action, reason, bulk, triggered, changes)
	SELECT u.model_id, u.at, u.actor, u.action, u.reason, u.bulk, u.triggered, u.changes::json
	FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::bool[],
		$7::bool[], $8::text[]) WITH ORDINALITY
		AS u(model_id, at, actor, action, reason, bulk, triggered, changes, n)
	ORDER BY u.n`

// queueAudit queues the insert of entries on b, and reports whether it
// queued one.
func queueAudit(b *pgx.Batch, entries []refresh.AuditEntry) (bool, error) {
	if len(entries) == 0 {
		return false, nil
	}
	n := len(entries)
	modelID, at, actor, action := newArrayText(n, idSize), newArrayText(n, timeSize), newArrayText(n, 0), newArrayText(n, 0)
	reason, bulk, triggered, changes := newArrayText(n, 0), newArrayText(n, boolSize), newArrayText(n, boolSize), newArrayText(n, 0)
	for _, e := range entries {
		if len(e.Changes) > 0 {
			data, err := json.Marshal(e.Changes)
			if err != nil {
				return false, fmt.Errorf("audit of model %q: encode changes: %w", e.ModelID, err)
			}
			changes.text(string(data))
		} else {
			changes.null()
		}
		modelID.text(e.ModelID)
		at.timeNotNull(e.At)
		actor.text(e.Actor)
		action.text(e.Action)
		reason.textOrNull(e.Reason)
		bulk.bool(e.Bulk)
		triggered.bool(e.Trigger)
	}
	b.Queue(insertAudit, modelID.value(), at.value(), actor.value(), action.value(), reason.value(),
		bulk.value(), triggered.value(), changes.value())
	return true, nil
}

// Audit returns the audit entries of model id, newest first (by at, then
// by id), at most limit (all when limit <= 0), older than the entry before
// (0: from the newest). The entries outlive their model.
func (s *Store) Audit(ctx context.Context, id string, before int64, limit int) ([]refresh.AuditEntry, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT id, model_id, at, actor, action, reason, bulk, triggered, changes
		FROM audit
		WHERE model_id = $1
		  AND ($2::bigint = 0 OR (at, id) < (SELECT at, id FROM audit WHERE id = $2 AND model_id = $1))
		ORDER BY at DESC, id DESC
		LIMIT $3`, id, before, lim)
	if err != nil {
		return nil, storeError(fmt.Sprintf("audit of model %q", id), err)
	}
	defer rows.Close()
	var out []refresh.AuditEntry
	for rows.Next() {
		var e refresh.AuditEntry
		var reason *string
		var changes []byte
		if err := rows.Scan(&e.ID, &e.ModelID, &e.At, &e.Actor, &e.Action, &reason, &e.Bulk, &e.Trigger, &changes); err != nil {
			return nil, storeError(fmt.Sprintf("audit of model %q", id), err)
		}
		e.At = e.At.UTC()
		e.Reason = fromNullString(reason)
		if changes != nil {
			if err := json.Unmarshal(changes, &e.Changes); err != nil {
				return nil, fmt.Errorf("audit of model %q: entry %d: decode changes: %w", id, e.ID, err)
			}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, storeError(fmt.Sprintf("audit of model %q", id), err)
	}
	return out, nil
}
