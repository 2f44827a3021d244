package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// DefaultThroughputModels is the default of ThroughputConfig.Models.
const DefaultThroughputModels = 100_000

// ThroughputConfig configures Throughput.
type ThroughputConfig struct {
	// Models is how many models are due at once (default
	// DefaultThroughputModels).
	Models int
}

func (c ThroughputConfig) withDefaults() (ThroughputConfig, error) {
	if c.Models < 0 {
		return c, fmt.Errorf("bench: throughput: Models: must be >= 1, got %d", c.Models)
	}
	if c.Models == 0 {
		c.Models = DefaultThroughputModels
	}
	return c, nil
}

// ThroughputResult holds the figures of the runs with all models due at
// once.
type ThroughputResult struct {
	Models int
	// Starts and Outcomes are the rates with 1, then 2 instances.
	Starts, Outcomes []InstanceRate
	// StartsSQL and OutcomesSQL are the rates of the same work in plain
	// SQL, per second.
	StartsSQL, OutcomesSQL float64
}

// InstanceRate is a rate, per second, reached by some instances together.
type InstanceRate struct {
	Instances int
	PerSec    float64
}

// Throughput measures starts/s and outcomes/s of the real Scheduler and
// Consumer passes with 1 and 2 instances in process, and the same work in
// plain SQL, with all models due at once.
func (b *Bench) Throughput(ctx context.Context, cfg ThroughputConfig) (ThroughputResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return ThroughputResult{}, err
	}
	res := ThroughputResult{Models: cfg.Models}
	poolCfg, err := b.newSchema(ctx, "throughput")
	if err != nil {
		return res, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return res, fmt.Errorf("connect to database: %w", err)
	}
	defer pool.Close()

	for _, k := range []int{1, 2} {
		if err := b.seed(ctx, pool, cfg.Models); err != nil {
			return res, err
		}
		b.logf("starting %d models with %s", cfg.Models, instances(k))
		d, err := b.runSchedulers(ctx, poolCfg, k, cfg.Models)
		if err != nil {
			return res, err
		}
		res.Starts = append(res.Starts, InstanceRate{k, float64(cfg.Models) / d.Seconds()})
		if err := b.queueOutcomes(ctx, pool); err != nil {
			return res, err
		}
		b.logf("applying %d outcomes with %s", cfg.Models, instances(k))
		d, err = b.runConsumers(ctx, poolCfg, k, cfg.Models)
		if err != nil {
			return res, err
		}
		res.Outcomes = append(res.Outcomes, InstanceRate{k, float64(cfg.Models) / d.Seconds()})
	}

	if err := b.seed(ctx, pool, cfg.Models); err != nil {
		return res, err
	}
	b.logf("starting and ending %d models in plain SQL", cfg.Models)
	d, err := b.claimSQL(ctx, pool, cfg.Models)
	if err != nil {
		return res, err
	}
	res.StartsSQL = float64(cfg.Models) / d.Seconds()
	// The history rows the starts wrote, as autovacuum would soon count
	// them: planned as the empty table seed left, the baseline's join
	// with them reads the whole table once a batch.
	if _, err := pool.Exec(ctx, `ANALYZE models, attempts`); err != nil {
		return res, err
	}
	d, err = b.applySQL(ctx, pool, cfg.Models)
	if err != nil {
		return res, err
	}
	res.OutcomesSQL = float64(cfg.Models) / d.Seconds()
	return res, nil
}

func instances(n int) string {
	if n == 1 {
		return "1 instance"
	}
	return fmt.Sprintf("%d instances", n)
}

// seed replaces the models with n idle models, all due, and empties the
// Redis keys.
func (b *Bench) seed(ctx context.Context, pool *pgxpool.Pool, n int) error {
	b.clearRedis(ctx)
	if _, err := pool.Exec(ctx, `TRUNCATE attempts, models`); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	now := b.clock.Now()
	_, err := pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
		SELECT 'model-' || lpad(i::text, 7, '0'), $1, $2::json, (SELECT freshen_policy_id($3::jsonb)),
			$4::timestamptz - interval '1 day', $4::timestamptz - interval '1 hour' - i * interval '1 millisecond'
		FROM generate_series(1, $5::int) AS i`, Queue, Payload, b.policy, now, n)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	for _, table := range []string{"models", "attempts"} {
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	return nil
}

// instance is one in-process scheduler instance: a pool and a Redis
// connection of its own.
type instance struct {
	pool   *pgxpool.Pool
	client *redis.Client
	store  *postgres.Store
	queue  *queue.Redis
}

func (b *Bench) newInstances(ctx context.Context, cfg *pgxpool.Config, k int) ([]instance, func(), error) {
	var out []instance
	closeAll := func() {
		for _, in := range out {
			in.pool.Close()
			_ = in.client.Close()
		}
	}
	for i := range k {
		pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect to database: %w", err)
		}
		client := redis.NewClient(b.redisOpt)
		q, err := queue.New(client, queue.Options{Prefix: b.prefix, Consumer: fmt.Sprintf("bench-%d", i), Logger: b.quiet})
		if err != nil {
			pool.Close()
			closeAll()
			return nil, nil, err
		}
		out = append(out, instance{pool: pool, client: client, store: postgres.New(pool), queue: q})
	}
	return out, closeAll, nil
}

// pass is one pass of a loop: how many models it handled and whether there
// may be more.
type pass func(ctx context.Context) (handled int, more bool, err error)

// runPasses runs one loop per instance, each made by newPass, until none
// has more to do, and returns how long that took. The loops must handle
// want models in all.
func (b *Bench) runPasses(ctx context.Context, cfg *pgxpool.Config, k int, what string, want int, newPass func(instance) (pass, error)) (time.Duration, error) {
	ins, closeAll, err := b.newInstances(ctx, cfg, k)
	if err != nil {
		return 0, err
	}
	defer closeAll()
	passes := make([]pass, len(ins))
	for i, in := range ins {
		if passes[i], err = newPass(in); err != nil {
			return 0, err
		}
	}
	var handled atomic.Int64
	errs := make([]error, k)
	var wg sync.WaitGroup
	begin := b.clock.Now()
	for i, p := range passes {
		wg.Go(func() {
			for {
				n, more, err := p(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				handled.Add(int64(n))
				if !more {
					return
				}
			}
		})
	}
	wg.Wait()
	d := b.clock.Now().Sub(begin)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if n := handled.Load(); n != int64(want) {
		return 0, fmt.Errorf("%s %d models, want %d", what, n, want)
	}
	return d, nil
}

// runSchedulers runs k schedulers' passes until no model is due and
// returns how long that took.
func (b *Bench) runSchedulers(ctx context.Context, cfg *pgxpool.Config, k, want int) (time.Duration, error) {
	return b.runPasses(ctx, cfg, k, "started", want, func(in instance) (pass, error) {
		s, err := refresh.NewScheduler(refresh.SchedulerConfig{
			Store: in.store, Queue: in.queue, Clock: b.clock, BatchSize: b.cfg.BatchSize, Logger: b.quiet,
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, bool, error) {
			res, err := s.RunOnce(ctx)
			return res.Started, res.Claimed > 0, err
		}, nil
	})
}

// queueOutcomes drops the jobs and pushes a success outcome for each
// running attempt, as workers would.
func (b *Bench) queueOutcomes(ctx context.Context, pool *pgxpool.Pool) error {
	if err := b.rdb.Del(ctx, b.keys.jobs()).Err(); err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT id, attempt_uid FROM models WHERE attempt_uid IS NOT NULL ORDER BY started_at, id`)
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	var msgs []any
	for rows.Next() {
		var o refresh.Outcome
		if err := rows.Scan(&o.ModelID, &o.AttemptUID); err != nil {
			return err
		}
		o.Type = refresh.OutcomeSuccess
		m, _ := json.Marshal(o)
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 10_000)
		if err := b.rdb.LPush(ctx, b.keys.outcomes(), msgs[:n]...).Err(); err != nil {
			return fmt.Errorf("push outcomes: %w", err)
		}
		msgs = msgs[n:]
	}
	return nil
}

// runConsumers runs k consumers' passes until the outcomes list is empty
// and returns how long that took.
func (b *Bench) runConsumers(ctx context.Context, cfg *pgxpool.Config, k, want int) (time.Duration, error) {
	return b.runPasses(ctx, cfg, k, "applied outcomes of", want, func(in instance) (pass, error) {
		c, err := refresh.NewConsumer(refresh.ConsumerConfig{
			Store: in.store, Outcomes: in.queue, Clock: b.clock,
			BatchSize: b.cfg.BatchSize, Logger: b.quiet,
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, bool, error) {
			res, err := c.RunOnce(ctx)
			return res.Applied, res.Received > 0, err
		}, nil
	})
}

// claimSQL is the baseline of the starts: the same claim (through the
// same index) and update as Store.ClaimDue with Scheduler's start, as one
// SQL statement a batch, with no round trip of the rows (the statement of
// refresh/postgres's BenchmarkClaimDueSQL). Like Freshen's start, it
// writes no history row: the model holds its running attempt.
func (b *Bench) claimSQL(ctx context.Context, pool *pgxpool.Pool, want int) (time.Duration, error) {
	begin := b.clock.Now()
	total := 0
	for {
		now := b.clock.Now()
		tag, err := pool.Exec(ctx, `WITH due AS (
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
			now, b.cfg.BatchSize, now.Add(time.Hour))
		if err != nil {
			return 0, fmt.Errorf("claim in plain SQL: %w", err)
		}
		n := int(tag.RowsAffected())
		if n == 0 {
			break
		}
		total += n
	}
	d := b.clock.Now().Sub(begin)
	if total != want {
		return 0, fmt.Errorf("plain SQL started %d models, want %d", total, want)
	}
	return d, nil
}

// applySQL is the baseline of the outcomes: successes fenced by attempt
// uid, applied a batch at a time in one statement that ends the attempts
// and writes their history rows, from the models as they were (read by a
// second scan of models in the same statement). The outcomes come from
// memory, not Redis, and the next run is a constant, not computed from the
// schedule.
func (b *Bench) applySQL(ctx context.Context, pool *pgxpool.Pool, want int) (time.Duration, error) {
	rows, err := pool.Query(ctx, `SELECT id, attempt_uid FROM models WHERE attempt_uid IS NOT NULL ORDER BY started_at, id`)
	if err != nil {
		return 0, fmt.Errorf("read attempts: %w", err)
	}
	var ids, uids []string
	for rows.Next() {
		var id, uid string
		if err := rows.Scan(&id, &uid); err != nil {
			return 0, err
		}
		ids, uids = append(ids, id), append(uids, uid)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	begin := b.clock.Now()
	total := 0
	for i := 0; i < len(ids); i += b.cfg.BatchSize {
		j := min(i+b.cfg.BatchSize, len(ids))
		now := b.clock.Now()
		tag, err := pool.Exec(ctx, `WITH o AS (
				SELECT * FROM unnest($1::text[], $2::text[]) AS o(id, uid)
			), done AS (
				UPDATE models AS m SET attempt_no = 0, attempt_uid = NULL, started_at = NULL,
					deadline_at = NULL, refresh_at = $4, consecutive_failures = 0,
					failing_since = NULL, last_success_at = $3, status_message = NULL, updated_at = now()
				FROM o, models AS was
				WHERE m.id = o.id AND m.attempt_uid = o.uid AND was.id = m.id
				RETURNING o.uid, m.id, was.attempt_no, was.started_at, was.deadline_at
			)
			INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at, finished_at, outcome)
			SELECT uid, id, attempt_no, started_at, deadline_at, $3, 'success' FROM done`,
			ids[i:j], uids[i:j], now, now.Add(12*time.Hour))
		if err != nil {
			return 0, fmt.Errorf("apply in plain SQL: %w", err)
		}
		total += int(tag.RowsAffected())
	}
	d := b.clock.Now().Sub(begin)
	if total != want {
		return 0, fmt.Errorf("plain SQL applied %d outcomes, want %d", total, want)
	}
	return d, nil
}
