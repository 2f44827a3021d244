package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of LatencyConfig.
const (
	DefaultLatencySamples  = 200
	DefaultLatencyLoadRate = 500
	// latencyLoadPeriod is how often each background model is due.
	latencyLoadPeriod = 20 * time.Second
	// latencyWait is how long a sample waits for its job and its outcome.
	latencyWait = 10 * time.Second
	// latencyPoll is how often a sample looks for its outcome in the
	// database.
	latencyPoll = time.Millisecond
	// latencyPrefix starts the ids of the sampled models, whose jobs the
	// worker reports (the background models' ids start with "bg-").
	latencyPrefix = "lat-"
)

// LatencyConfig configures Latency.
type LatencyConfig struct {
	// Samples is how many triggers, and how many PUTs, are timed idle and
	// again under load (default DefaultLatencySamples).
	Samples int
	// LoadRate is how many background cycles a second fall due under
	// load (default DefaultLatencyLoadRate), from LoadRate * 20s models.
	LoadRate float64
	// Concurrency is the worker's (default DefaultWorkerConcurrency).
	Concurrency int
}

func (c LatencyConfig) withDefaults() (LatencyConfig, error) {
	switch {
	case c.Samples < 0:
		return c, fmt.Errorf("bench: latency: Samples: must be >= 1, got %d", c.Samples)
	case c.LoadRate < 0:
		return c, fmt.Errorf("bench: latency: LoadRate: must be > 0, got %g", c.LoadRate)
	case c.Concurrency < 0:
		return c, fmt.Errorf("bench: latency: Concurrency: must be >= 1, got %d", c.Concurrency)
	}
	if c.Samples == 0 {
		c.Samples = DefaultLatencySamples
	}
	if c.LoadRate == 0 {
		c.LoadRate = DefaultLatencyLoadRate
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultWorkerConcurrency
	}
	return c, nil
}

// Latencies are the median and 99th percentile (and max) of the samples of
// one kind of write: from the request sent to the job in the worker's
// handler (Worker), and to the outcome applied (Applied: finished_at of
// the attempt in the database).
type Latencies struct {
	WorkerP50, WorkerP99, WorkerMax    time.Duration
	AppliedP50, AppliedP99, AppliedMax time.Duration
}

// LatencyPhase holds the figures of one phase, idle or under load.
type LatencyPhase struct {
	// Trigger is POST /models/{id}/trigger on an idle model; Put a PUT
	// that changes the payload of a disabled model.
	Trigger, Put Latencies
	// CyclesPerSec is how many background attempts ended a second during
	// the phase (0 idle).
	CyclesPerSec float64
}

// LatencyResult holds the figures of a latency run.
type LatencyResult struct {
	Samples    int
	LoadRate   float64
	LoadModels int
	Idle, Load LatencyPhase
}

// Latency measures how long a write takes to reach a worker and to have
// its outcome applied: Samples triggers of idle models, and Samples PUTs
// that change a disabled model (which re-enables it and starts it now),
// one at a time, with freshen serve and freshen bench worker (reporting
// when each job reaches its handler) as child processes; first idle, then
// while LoadRate background cycles a second fall due.
func (b *Bench) Latency(ctx context.Context, cfg LatencyConfig) (LatencyResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return LatencyResult{}, err
	}
	res := LatencyResult{Samples: cfg.Samples, LoadRate: cfg.LoadRate,
		LoadModels: max(1, int(cfg.LoadRate*latencyLoadPeriod.Seconds()))}
	poolCfg, pool, err := b.freshRun(ctx, "latency")
	if err != nil {
		return res, err
	}
	defer pool.Close()

	// The sampled models: idle, due in a day; the PUT ones are disabled
	// before their phase.
	b.logf("latency: loading %d models", 4*cfg.Samples)
	if err := b.load(ctx, pool, latencyPrefix, 4*cfg.Samples, b.clock.Now().Add(24*time.Hour), 0); err != nil {
		return res, err
	}
	serve, err := b.startServe(ctx, poolCfg, steadyServeFlags(DefaultSoakHorizon)...)
	if err != nil {
		return res, err
	}
	defer serve.kill()
	took := &tookLines{waiting: map[string]chan time.Time{}}
	worker, err := b.startWorkerWith(ctx, cfg.Concurrency, took.line, "--report", latencyPrefix)
	if err != nil {
		return res, err
	}
	defer worker.kill()
	l := &latency{b: b, pool: pool, base: "http://" + serve.addr, took: took, client: &http.Client{Timeout: latencyWait}}
	if err := l.ready(ctx); err != nil {
		return res, err
	}

	b.logf("latency: idle: %d triggers, %d PUTs", cfg.Samples, cfg.Samples)
	if res.Idle, err = l.phase(ctx, 0, cfg.Samples); err != nil {
		return res, err
	}

	t0 := b.clock.Now().Add(3*time.Second + time.Duration(res.LoadModels)*30*time.Microsecond).Truncate(time.Second)
	if _, err := b.loadSteady(ctx, pool, "bg-", res.LoadModels, cfg.LoadRate, t0); err != nil {
		return res, err
	}
	// A period for the load to settle.
	select {
	case <-b.clock.After(t0.Add(latencyLoadPeriod).Sub(b.clock.Now())):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	b.logf("latency: under load (%.0f cycles/s due): %d triggers, %d PUTs", cfg.LoadRate, cfg.Samples, cfg.Samples)
	from := b.clock.Now()
	if res.Load, err = l.phase(ctx, 2*cfg.Samples, cfg.Samples); err != nil {
		return res, err
	}
	to := b.clock.Now()
	var ended int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE model_id LIKE 'bg-%' AND finished_at >= $1 AND finished_at < $2`,
		from, to).Scan(&ended); err != nil {
		return res, fmt.Errorf("background cycles: %w", err)
	}
	res.Load.CyclesPerSec = float64(ended) / to.Sub(from).Seconds()
	select {
	case <-worker.done:
		return res, worker.exited()
	default:
	}
	if err := worker.stop(); err != nil {
		return res, err
	}
	return res, serve.stop()
}

// tookLines hands the times of the worker's "took" lines to the samples
// waiting for them.
type tookLines struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
}

// wait returns the channel that receives when the job of model id next
// reaches the worker.
func (t *tookLines) wait(id string) <-chan time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := make(chan time.Time, 1)
	t.waiting[id] = c
	return c
}

// line reads one line of the worker's output.
func (t *tookLines) line(l string) {
	took, ok := parseTook(l)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.waiting[took.modelID]; ok {
		c <- took.at
		delete(t.waiting, took.modelID)
	}
}

// latency times the samples of a run.
type latency struct {
	b      *Bench
	pool   *pgxpool.Pool
	base   string
	took   *tookLines
	client *http.Client
}

// ready waits until serve answers /readyz with 200: its API answers 503
// until its loops run.
func (l *latency) ready(ctx context.Context) error {
	deadline := l.b.clock.Now().Add(startTimeout)
	for {
		resp, err := l.client.Get(l.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if l.b.clock.Now().After(deadline) {
			return fmt.Errorf("freshen serve was not ready within %s", startTimeout)
		}
		select {
		case <-l.b.clock.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// phase times n triggers of the models first.. and n PUTs of the models
// first+n.., disabled first.
func (l *latency) phase(ctx context.Context, first, n int) (LatencyPhase, error) {
	var p LatencyPhase
	id := func(i int) string { return fmt.Sprintf("%s%07d", latencyPrefix, i) }
	ids := make([]string, n)
	for i := range n {
		ids[i] = id(first + n + i)
	}
	if _, err := l.pool.Exec(ctx, `UPDATE models SET disabled_at = now(), disabled_reason = 'bench', refresh_at = NULL
		WHERE id = ANY($1)`, ids); err != nil {
		return p, fmt.Errorf("disable models: %w", err)
	}
	var err error
	if p.Trigger, err = l.time(ctx, n, func(i int) (string, string, string, []byte) {
		return id(first + i), http.MethodPost, "/models/" + id(first+i) + "/trigger", nil
	}); err != nil {
		return p, err
	}
	p.Put, err = l.time(ctx, n, func(i int) (string, string, string, []byte) {
		body := `{"queue": "` + Queue + `", "policy": ` + Policy + `, "payload": {"sample": ` + strconv.Itoa(first+n+i) + `}}`
		return ids[i], http.MethodPut, "/models/" + ids[i], []byte(body)
	})
	return p, err
}

// time sends the n requests req gives (model id, method, path, body) one
// at a time and returns their latencies.
func (l *latency) time(ctx context.Context, n int, req func(i int) (id, method, path string, body []byte)) (Latencies, error) {
	var worker, applied []time.Duration
	for i := range n {
		id, method, path, body := req(i)
		got := l.took.wait(id)
		r, err := http.NewRequestWithContext(ctx, method, l.base+path, bytes.NewReader(body))
		if err != nil {
			return Latencies{}, err
		}
		r.Header.Set("Content-Type", "application/json")
		sent := l.b.clock.Now()
		resp, err := l.client.Do(r)
		if err != nil {
			return Latencies{}, fmt.Errorf("%s %s: %w", method, path, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return Latencies{}, fmt.Errorf("%s %s: status %d", method, path, resp.StatusCode)
		}
		select {
		case at := <-got:
			worker = append(worker, at.Sub(sent))
		case <-l.b.clock.After(latencyWait):
			return Latencies{}, fmt.Errorf("%s %s: no job reached the worker within %s", method, path, latencyWait)
		case <-ctx.Done():
			return Latencies{}, ctx.Err()
		}
		finished, err := l.applied(ctx, id, sent)
		if err != nil {
			return Latencies{}, fmt.Errorf("%s %s: %w", method, path, err)
		}
		applied = append(applied, finished.Sub(sent))
	}
	var lat Latencies
	lat.WorkerP50, lat.WorkerP99, lat.WorkerMax = quantiles(worker)
	lat.AppliedP50, lat.AppliedP99, lat.AppliedMax = quantiles(applied)
	return lat, nil
}

// applied polls the database until an attempt of model id started after
// sent has finished, and returns when it did (finished_at).
func (l *latency) applied(ctx context.Context, id string, sent time.Time) (time.Time, error) {
	deadline := l.b.clock.Now().Add(latencyWait)
	for {
		var finished *time.Time
		err := l.pool.QueryRow(ctx, `SELECT max(finished_at) FROM attempts WHERE model_id = $1 AND started_at >= $2`,
			id, sent.Add(-time.Millisecond)).Scan(&finished)
		if err != nil {
			return time.Time{}, fmt.Errorf("read outcome: %w", err)
		}
		if finished != nil {
			return *finished, nil
		}
		if l.b.clock.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no outcome applied within %s", latencyWait)
		}
		select {
		case <-l.b.clock.After(latencyPoll):
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// quantiles returns the median, 99th percentile and max of d (nearest
// rank).
func quantiles(d []time.Duration) (p50, p99, worst time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return rank(0.5), rank(0.99), s[len(s)-1]
}
