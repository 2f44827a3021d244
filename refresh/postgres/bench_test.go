package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

const (
	benchModels = 100_000
	benchBatch  = 1000
)

// seed replaces the models with benchModels idle models, all due at t0.
func seed(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `TRUNCATE attempts, models`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
		SELECT 'model-' || lpad(i::text, 6, '0'), 'tables', '{"input_url": "https://example.com/a.csv"}',
			(SELECT freshen_policy_id('{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timeout": "1h", "retry": {"delays": ["1m", "5m"], "jitter": 0},
			  "on_exhausted": "disable", "disabled_message": "Refresh disabled"}')),
			$1::timestamptz, $1::timestamptz - i * interval '1 millisecond'
		FROM generate_series(1, $2::int) AS i`, t0, benchModels)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `VACUUM ANALYZE models`)
	require.NoError(b, err)
}

// BenchmarkClaimDue starts an attempt of each of 100,000 due models through
// Store.ClaimDue, 1000 a batch: the store reads and decodes the models,
// startAll moves each one's refresh_at to its deadline and adds a history
// row, the store writes them back.
func BenchmarkClaimDue(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	claimed := 0
	for b.Loop() {
		b.StopTimer()
		seed(b, bb.pool)
		b.StartTimer()
		for {
			n, err := bb.store.ClaimDue(ctx, t0, benchBatch, startAll)
			require.NoError(b, err)
			if n == 0 {
				break
			}
			claimed += n
		}
	}
	require.Equal(b, benchModels*b.N, claimed)
	b.ReportMetric(float64(claimed)/b.Elapsed().Seconds(), "models/s")
}

// BenchmarkClaimDueSQL is the baseline of BenchmarkClaimDue: the same
// claim and writes as one SQL statement a batch, with no round trip of the
// rows through Go.
func BenchmarkClaimDueSQL(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	deadline := t0.Add(time.Hour)
	claimed := 0
	for b.Loop() {
		b.StopTimer()
		seed(b, bb.pool)
		b.StartTimer()
		for {
			tag, err := bb.pool.Exec(ctx, `WITH due AS (
					SELECT id FROM models
					WHERE due_at <= $1 AND NOT waiting_for_slot
					ORDER BY due_at, id
					LIMIT $2
					FOR UPDATE SKIP LOCKED
				)
				UPDATE models AS m SET attempt_no = m.attempt_no + 1,
					attempt_uid = m.id || ':' || (m.attempt_no + 1),
					started_at = $1, deadline_at = $3, refresh_at = $3, updated_at = now()
				FROM due WHERE m.id = due.id`,
				t0, benchBatch, deadline)
			require.NoError(b, err)
			n := int(tag.RowsAffected())
			if n == 0 {
				break
			}
			claimed += n
		}
	}
	require.Equal(b, benchModels*b.N, claimed)
	b.ReportMetric(float64(claimed)/b.Elapsed().Seconds(), "models/s")
}

// BenchmarkClaimDueWaiting is one scheduler pass while models wait for a
// slot: N models waiting for the limit prefix:model- (one slot free),
// ten waiting for prefix:other- (five free), and a third limit nobody
// waits for. The pass finds the limits waited for, counts their attempts,
// takes each limit's earliest waiting models and fills the batch of 1000
// with waiting models (locking them), writing nothing. Its time should
// not grow with N.
func BenchmarkClaimDueWaiting(b *testing.B) {
	for _, n := range []int{1000, benchModels} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			bb := setup(b)
			ctx := context.Background()
			_, err := bb.pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at, waiting_for_slot, waiting_limit)
				SELECT 'model-' || lpad(i::text, 6, '0'), 'tables', '{}'::json, (SELECT freshen_policy_id('{"timeout": "1h"}')),
					$1::timestamptz, $1::timestamptz - i * interval '1 millisecond', true, 'prefix:model-'
				FROM generate_series(1, $2::int) AS i
				UNION ALL
				SELECT 'other-' || i, 'exports', '{}'::json, (SELECT freshen_policy_id('{"timeout": "1h"}')), $1::timestamptz, $1::timestamptz, true, 'prefix:other-'
				FROM generate_series(1, 10) AS i`, t0, n)
			require.NoError(b, err)
			_, err = bb.pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at, attempt_uid, attempt_no, started_at, deadline_at)
				SELECT 'model-r' || i, 'tables', '{}', (SELECT freshen_policy_id('{"timeout": "1h"}')), $1::timestamptz, $2::timestamptz, 'uid-' || i, 1, $1::timestamptz, $2::timestamptz
				FROM generate_series(1, 6) AS i`, t0, t0.Add(time.Hour))
			require.NoError(b, err)
			for _, l := range []refresh.Limit{{Kind: refresh.LimitPrefix, Key: "model-", MaxRunning: 7},
				{Kind: refresh.LimitPrefix, Key: "other-", MaxRunning: 5}, {Kind: refresh.LimitQueue, Key: "idle", MaxRunning: 3}} {
				_, err := bb.store.PutLimit(ctx, l, false)
				require.NoError(b, err)
			}
			_, err = bb.pool.Exec(ctx, `VACUUM ANALYZE models`)
			require.NoError(b, err)
			for b.Loop() {
				claimed, err := bb.store.ClaimDue(ctx, t0, benchBatch, func(due []refresh.Model, slots refresh.Slots) (refresh.Batch, error) {
					return refresh.Batch{}, nil
				})
				require.NoError(b, err)
				// The batch's 1000 earliest waiting models (all model-), and
				// five other- for the free slots of their limit.
				require.Equal(b, benchBatch+5, claimed)
			}
		})
	}
}
