package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Defaults of LatenessConfig.
const (
	DefaultLatenessModels = 1_000_000
	DefaultLatenessRate   = 1000
	DefaultLatenessWindow = time.Minute
)

// LatenessConfig configures Lateness.
type LatenessConfig struct {
	// Models is how many models are loaded (default
	// DefaultLatenessModels).
	Models int
	// Rate is how many of them are due per second (default
	// DefaultLatenessRate).
	Rate int
	// Window is how long freshen serve is watched (default
	// DefaultLatenessWindow, at least a second).
	Window time.Duration
}

func (c LatenessConfig) withDefaults() (LatenessConfig, error) {
	switch {
	case c.Models < 0:
		return c, fmt.Errorf("bench: lateness: Models: must be >= 1, got %d", c.Models)
	case c.Rate < 0:
		return c, fmt.Errorf("bench: lateness: Rate: must be >= 1, got %d", c.Rate)
	case c.Window < 0 || (c.Window > 0 && c.Window < time.Second):
		return c, fmt.Errorf("bench: lateness: Window: must be >= 1s, got %s", c.Window)
	}
	if c.Models == 0 {
		c.Models = DefaultLatenessModels
	}
	if c.Rate == 0 {
		c.Rate = DefaultLatenessRate
	}
	if c.Window == 0 {
		c.Window = DefaultLatenessWindow
	}
	return c, nil
}

// LatenessResult holds the figures of the lateness run.
type LatenessResult struct {
	Models, Rate int
	Window       time.Duration
	// P50, P99 and Max are how late attempts started: started_at of the
	// history minus the time the model was due.
	P50, P99, Max time.Duration
	// PickP50 and PickP99 are how late their jobs reached the worker.
	PickP50, PickP99 time.Duration
	// PeakRSS is the peak resident set size of freshen serve (VmHWM), in
	// bytes.
	PeakRSS int64
	// Measured is how many starts were measured; Missed how many models
	// due in the measured span did not start.
	Measured, Missed int
	// Skipped is the part of the window not measured at its start: the
	// models due while the models were being loaded.
	Skipped time.Duration
	// WAL is what the server did during the window, from the end of the
	// load: checkpoints, WAL bytes and full-page images written.
	WAL WALActivity
}

// WALActivity is the difference of the server's checkpoint and WAL
// counters (pg_stat_bgwriter, pg_stat_wal) over a span. Requested counts
// the checkpoints among Checkpoints that the server started because its
// WAL reached max_wal_size rather than at checkpoint_timeout: each one
// makes the next write of every page a full-page image.
type WALActivity struct {
	Checkpoints int64
	Requested   int64
	Bytes       int64
	FullPages   int64
}

// walCounters reads the server's checkpoint and WAL counters.
func walCounters(ctx context.Context, pool *pgxpool.Pool) (WALActivity, error) {
	var w WALActivity
	err := pool.QueryRow(ctx, `SELECT checkpoints_timed + checkpoints_req, checkpoints_req,
		(SELECT wal_bytes::bigint FROM pg_stat_wal), (SELECT wal_fpi FROM pg_stat_wal)
		FROM pg_stat_bgwriter`).Scan(&w.Checkpoints, &w.Requested, &w.Bytes, &w.FullPages)
	if err != nil {
		return w, fmt.Errorf("read WAL counters: %w", err)
	}
	return w, nil
}

// since returns the activity from before to w.
func (w WALActivity) since(before WALActivity) WALActivity {
	return WALActivity{Checkpoints: w.Checkpoints - before.Checkpoints, Requested: w.Requested - before.Requested,
		Bytes: w.Bytes - before.Bytes, FullPages: w.FullPages - before.FullPages}
}

// Lateness loads Models models, Rate of them due per second, runs freshen
// serve as a child process for Window with a worker that succeeds every
// job, and measures how late each attempt started (started_at in the
// history minus the time the model was due) and how late its job reached
// the worker.
//
// The models due during the window (w-0000000 and up, due from T0 on) are
// loaded once serve runs, so that serve's start does not make them late;
// the others (f-...) are loaded before, due from after the window on.
func (b *Bench) Lateness(ctx context.Context, cfg LatenessConfig) (LatenessResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return LatenessResult{}, err
	}
	res := LatenessResult{Models: cfg.Models, Rate: cfg.Rate, Window: cfg.Window}
	poolCfg, err := b.newSchema(ctx, "lateness")
	if err != nil {
		return res, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return res, fmt.Errorf("connect to database: %w", err)
	}
	defer pool.Close()
	b.clearRedis(ctx)

	step := time.Second / time.Duration(cfg.Rate)
	inWindow := min(cfg.Models, int((cfg.Window+10*time.Second)/step))
	later := cfg.Models - inWindow
	b.logf("loading %d models due later", later)
	farBase := b.clock.Now().Add(5*time.Minute + cfg.Window)
	if err := b.load(ctx, pool, "f-", later, farBase, step); err != nil {
		return res, err
	}

	b.logf("starting freshen serve")
	serve, err := b.startServe(ctx, poolCfg)
	if err != nil {
		return res, err
	}
	defer serve.kill()

	drainCtx, stopDrain := context.WithCancel(ctx)
	drain := &drainWorker{b: b}
	drained := make(chan error, 1)
	go func() { drained <- drain.run(drainCtx) }()
	defer func() {
		stopDrain()
		<-drained
	}()

	// The models due in the window, from T0 on; their load takes about a
	// second per 100,000 rows, so T0 leaves twice that.
	lead := 2*time.Second + time.Duration(inWindow)*20*time.Microsecond
	t0 := b.clock.Now().Add(lead).Truncate(time.Millisecond)
	drain.setDue(t0, step)
	b.logf("loading %d models due from now on, %d a second, and watching for %s", inWindow, cfg.Rate, cfg.Window)
	if err := b.load(ctx, pool, "w-", inWindow, t0, step); err != nil {
		return res, err
	}
	loaded := b.clock.Now()
	walBefore, err := walCounters(ctx, pool)
	if err != nil {
		return res, err
	}
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, current_schema())`, postgres.NotifyChannel); err != nil {
		return res, err
	}
	end := t0.Add(cfg.Window)
	select {
	case <-b.clock.After(end.Sub(b.clock.Now())):
	case <-serve.done:
		return res, fmt.Errorf("freshen serve exited during the run: %s\n%s", serve.cmd.ProcessState, serve.out.String())
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.PeakRSS, err = peakRSS(serve.pid())
	if err != nil {
		return res, err
	}
	walAfter, err := walCounters(ctx, pool)
	if err != nil {
		return res, err
	}
	res.WAL = walAfter.since(walBefore)
	if err := serve.stop(); err != nil {
		return res, err
	}

	// Measured: the models due from the end of their load (earlier ones
	// were late by construction) up to a second before the end.
	from := t0
	if loaded.After(from) {
		from = loaded
	}
	res.Skipped = from.Sub(t0)
	until := end.Add(-time.Second)
	var p50, p99, worst *float64
	err = pool.QueryRow(ctx, `WITH due AS (
			SELECT id, $1::timestamptz + substr(id, 3)::bigint * $2::bigint * interval '1 microsecond' AS due_at
			FROM models WHERE id LIKE 'w-%'
		), late AS (
			SELECT extract(epoch FROM a.started_at - d.due_at) AS s
			FROM due d JOIN attempts a ON a.model_id = d.id AND a.attempt_no = 1
			WHERE d.due_at >= $3 AND d.due_at <= $4
		)
		SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY s),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY s), max(s)
		FROM late`, t0, step.Microseconds(), from, until).Scan(&res.Measured, &p50, &p99, &worst)
	if err != nil {
		return res, fmt.Errorf("measure lateness: %w", err)
	}
	if res.Measured == 0 {
		return res, errors.New("no attempt started in the window")
	}
	res.P50, res.P99, res.Max = seconds(*p50), seconds(*p99), seconds(*worst)
	var due int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM models WHERE id LIKE 'w-%'
		AND $1::timestamptz + substr(id, 3)::bigint * $2::bigint * interval '1 microsecond' BETWEEN $3 AND $4`,
		t0, step.Microseconds(), from, until).Scan(&due)
	if err != nil {
		return res, fmt.Errorf("measure lateness: %w", err)
	}
	res.Missed = due - res.Measured
	res.PickP50, res.PickP99 = drain.percentiles(from, until)
	return res, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// drainWorker takes jobs a batch at a time and answers each with a
// success, pipelined. It is not a reliable worker (a job it holds when it
// dies is lost); it is as fast as a worker can be. It notes how late each
// job of a model due in the window reached it.
type drainWorker struct {
	b    *Bench
	mu   sync.Mutex
	t0   time.Time
	step time.Duration
	late map[time.Time]time.Duration // due time -> lateness
}

func (w *drainWorker) setDue(t0 time.Time, step time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t0, w.step, w.late = t0, step, map[time.Time]time.Duration{}
}

func (w *drainWorker) run(ctx context.Context) error {
	b := w.b
	for ctx.Err() == nil {
		raws, err := b.rdb.RPopCount(ctx, b.keys.jobs(), 1000).Result()
		if errors.Is(err, redis.Nil) || (err == nil && len(raws) == 0) {
			kv, err := b.rdb.BRPop(ctx, time.Second, b.keys.jobs()).Result()
			if errors.Is(err, redis.Nil) || ctx.Err() != nil {
				continue
			}
			if err != nil {
				return err
			}
			raws = kv[1:]
		} else if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := b.clock.Now()
		msgs := make([]any, 0, len(raws))
		for _, raw := range raws {
			var job refresh.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				return fmt.Errorf("drain worker: %w", err)
			}
			w.note(job.ModelID, now)
			m, _ := json.Marshal(refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess})
			msgs = append(msgs, m)
		}
		if err := b.rdb.LPush(ctx, b.keys.outcomes(), msgs...).Err(); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// note records that the job of model id reached the worker at now.
func (w *drainWorker) note(id string, now time.Time) {
	n, ok := strings.CutPrefix(id, "w-")
	if !ok {
		return
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	due := w.t0.Add(time.Duration(i) * w.step)
	if _, seen := w.late[due]; !seen {
		w.late[due] = now.Sub(due)
	}
}

// percentiles returns the median and 99th percentile of the lateness of
// the jobs of models due between from and until.
func (w *drainWorker) percentiles(from, until time.Time) (p50, p99 time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var l []time.Duration
	for due, d := range w.late {
		if !due.Before(from) && !due.After(until) {
			l = append(l, d)
		}
	}
	if len(l) == 0 {
		return 0, 0
	}
	slices.Sort(l)
	return l[len(l)/2], l[min(len(l)-1, len(l)*99/100)]
}
