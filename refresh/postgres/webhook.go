package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/refresh"
)

// Webhook deliveries (migrations/007_webhooks.sql) are written with the
// events they carry, in the transaction of TakeEventsRouted, and sent by
// the dispatcher of refresh/webhook through the methods below.

var _ refresh.DeliveryStore = (*Store)(nil)

// TakeEventsRouted is TakeEvents whose fn also returns webhook deliveries,
// inserted in the transaction that deletes the events taken.
func (s *Store) TakeEventsRouted(ctx context.Context, limit int, fn func(events []refresh.Event) ([]refresh.Delivery, error)) (int, error) {
	return s.takeEvents(ctx, limit, fn)
}

// queueDeliveries queues the insert of ds, due at their CreatedAt, on b.
func queueDeliveries(b *pgx.Batch, ds []refresh.Delivery) {
	if len(ds) == 0 {
		return
	}
	endpoints := make([]string, len(ds))
	models := make([]string, len(ds))
	events := make([]string, len(ds))
	keys := make([]string, len(ds))
	payloads := make([]string, len(ds))
	created := make([]time.Time, len(ds))
	for i, d := range ds {
		endpoints[i], models[i], events[i], keys[i] = d.Endpoint, d.ModelID, d.Event, d.Key
		payloads[i], created[i] = string(d.Payload), d.CreatedAt
	}
	b.Queue(`INSERT INTO webhook_deliveries (endpoint, model_id, event, idempotency_key, payload, created_at, next_at)
		SELECT e, m, ev, k, p, c, c
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS d(e, m, ev, k, p, c)`,
		endpoints, models, events, keys, payloads, created)
}

// ClaimDeliveries claims, for each endpoint of limits, up to its limit of
// the pending deliveries due at now (oldest next_at first), skipping rows
// that other callers hold: each one's attempts grows by one, its claim
// becomes claim and it is due again at leaseUntil, should its result never
// be recorded. Concurrent callers never claim the same delivery.
func (s *Store) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, claim string, limits map[string]int) ([]refresh.Delivery, error) {
	names := make([]string, 0, len(limits))
	counts := make([]int32, 0, len(limits))
	for name, n := range limits {
		if n > 0 {
			names, counts = append(names, name), append(counts, int32(n))
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT d.id FROM unnest($1::text[], $2::int[]) AS e(name, n)
			CROSS JOIN LATERAL (
				SELECT id FROM webhook_deliveries
				WHERE endpoint = e.name AND state = 'pending' AND next_at <= $3
				ORDER BY next_at, id LIMIT e.n
				FOR UPDATE SKIP LOCKED
			) d
		)
		UPDATE webhook_deliveries w SET attempts = w.attempts + 1, claim = $4, next_at = $5
		FROM due WHERE w.id = due.id
		RETURNING w.id, w.endpoint, w.model_id, w.event, w.idempotency_key, w.payload, w.created_at, w.attempts, w.claim`,
		names, counts, now, claim, leaseUntil)
	if err != nil {
		return nil, storeError("claim deliveries", err)
	}
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refresh.Delivery, error) {
		var d refresh.Delivery
		var payload string
		err := row.Scan(&d.ID, &d.Endpoint, &d.ModelID, &d.Event, &d.Key, &payload, &d.CreatedAt, &d.Attempts, &d.Claim)
		d.Payload, d.CreatedAt = []byte(payload), d.CreatedAt.UTC()
		return d, err
	})
	if err != nil {
		return nil, storeError("claim deliveries", err)
	}
	return ds, nil
}

// FinishDelivery records r, the result of the send of d, if d's claim is
// still the delivery's. It reports whether it was (false: the lease ran
// out and another caller claimed the delivery since, or it is gone).
func (s *Store) FinishDelivery(ctx context.Context, d refresh.Delivery, r refresh.DeliveryResult) (bool, error) {
	var status *int
	if r.Status != 0 {
		status = &r.Status
	}
	var msg *string
	if r.Error != "" {
		msg = &r.Error
	}
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = $3, next_at = $4, last_status = $5, last_error = $6
		WHERE id = $1 AND claim = $2 AND state = 'pending'`, d.ID, d.Claim, r.State, r.At, status, msg)
	if err != nil {
		return false, storeError("finish delivery", err)
	}
	return tag.RowsAffected() == 1, nil
}

// pruneBatch bounds the rows one statement of PruneDeliveries deletes.
const pruneBatch = 5000

// PruneDeliveries deletes the deliveries delivered before deliveredBefore
// and those given up before failedBefore, and returns how many.
func (s *Store) PruneDeliveries(ctx context.Context, deliveredBefore, failedBefore time.Time) (int, error) {
	total := 0
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
				SELECT id FROM webhook_deliveries
				WHERE (state = 'delivered' AND next_at < $1) OR (state = 'failed' AND next_at < $2)
				LIMIT $3)`, deliveredBefore, failedBefore, pruneBatch)
		if err != nil {
			return total, storeError("prune deliveries", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}

// PendingDeliveries returns how many deliveries are pending, by endpoint.
func (s *Store) PendingDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT endpoint, count(*) FROM webhook_deliveries WHERE state = 'pending' GROUP BY endpoint`)
	if err != nil {
		return nil, storeError("count pending deliveries", err)
	}
	out := map[string]int{}
	var name string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		out[name] = n
		return nil
	})
	if err != nil {
		return nil, storeError("count pending deliveries", err)
	}
	return out, nil
}
