package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Defaults of SoakConfig.
const (
	DefaultSoakModels      = 1_000_000
	DefaultSoakDuration    = 30 * time.Minute
	DefaultSoakHorizon     = 2 * time.Minute
	DefaultSoakBurstModels = 10_000
	DefaultSoakConcurrency = 512
	DefaultSoakFailPercent = 10
	DefaultSoakHangPercent = 1
)

// The policy of the models of Soak and of the background of Latency: due
// every Period seconds on a grid anchored at soakAnchor, each model shifted
// by its spread offset; a hung job times out after soakTimeout and a
// failure is retried after 1s, then 2s, then waits for the next
// occurrence.
const (
	soakTimeout = 5 * time.Second
	// soakSlack is how long after its due time a start, its retries and
	// their outcomes must be over: the timeout, the retry delays and a
	// margin.
	soakSlack = soakTimeout + 3*time.Second + 5*time.Second
)

var soakAnchor = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// SoakConfig configures Soak.
type SoakConfig struct {
	// Models is how many models are loaded (default DefaultSoakModels).
	Models int
	// Rate is how many cycles a second fall due; 0 measures a burst of
	// BurstModels first (E2E) and takes half its cycles/s.
	Rate float64
	// BurstModels is the size of that burst (default
	// DefaultSoakBurstModels).
	BurstModels int
	// Duration is how long the load runs (default DefaultSoakDuration).
	Duration time.Duration
	// Interval is the time between two samples (default a minute, or a
	// fifth of Duration if shorter).
	Interval time.Duration
	// Horizon is serve's --history-max-age (default DefaultSoakHorizon);
	// at least twice Interval and soakSlack.
	Horizon time.Duration
	// Concurrency is the worker's (default DefaultSoakConcurrency).
	Concurrency int
	// FailPercent of the jobs fail, HangPercent run until their deadline
	// (defaults DefaultSoakFailPercent, DefaultSoakHangPercent).
	FailPercent, HangPercent float64
	// OnSample, if set, is called with each sample as it is taken.
	OnSample func(SoakSample)
}

func (c SoakConfig) withDefaults() (SoakConfig, error) {
	switch {
	case c.Models < 0:
		return c, fmt.Errorf("bench: soak: Models: must be >= 1, got %d", c.Models)
	case c.Rate < 0:
		return c, fmt.Errorf("bench: soak: Rate: must be > 0, got %g", c.Rate)
	case c.BurstModels < 0:
		return c, fmt.Errorf("bench: soak: BurstModels: must be >= 1, got %d", c.BurstModels)
	case c.Duration < 0 || c.Interval < 0 || c.Horizon < 0:
		return c, fmt.Errorf("bench: soak: Duration, Interval, Horizon: must be > 0, got %s, %s, %s", c.Duration, c.Interval, c.Horizon)
	case c.Concurrency < 0:
		return c, fmt.Errorf("bench: soak: Concurrency: must be >= 1, got %d", c.Concurrency)
	case c.FailPercent < 0 || c.HangPercent < 0 || c.FailPercent+c.HangPercent > 100:
		return c, fmt.Errorf("bench: soak: FailPercent, HangPercent: must be >= 0 and add up to at most 100, got %g and %g", c.FailPercent, c.HangPercent)
	}
	if c.Models == 0 {
		c.Models = DefaultSoakModels
	}
	if c.BurstModels == 0 {
		c.BurstModels = DefaultSoakBurstModels
	}
	if c.Duration == 0 {
		c.Duration = DefaultSoakDuration
	}
	if c.Interval == 0 {
		c.Interval = min(time.Minute, c.Duration/5)
	}
	if c.Horizon == 0 {
		c.Horizon = DefaultSoakHorizon
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultSoakConcurrency
	}
	switch {
	case c.Interval < time.Second || c.Interval > c.Duration:
		return c, fmt.Errorf("bench: soak: Interval: must be between 1s and Duration (%s), got %s", c.Duration, c.Interval)
	case c.Horizon < 2*c.Interval || c.Horizon < 2*soakSlack:
		return c, fmt.Errorf("bench: soak: Horizon: must be at least twice Interval and %s, got %s", 2*soakSlack, c.Horizon)
	}
	return c, nil
}

// SoakSample is what one interval of Soak did, and what the processes and
// tables took at its end. Starts are the first attempts of a scheduled
// occurrence (attempt_no 1); their lateness is started_at minus the
// occurrence.
type SoakSample struct {
	// At is the end of the interval, from the start of the load.
	At time.Duration
	// CyclesPerSec is how many attempts ended a second (any outcome, Ended
	// in all); Succeeded, Failed and TimedOut count them by outcome.
	CyclesPerSec                float64
	Ended                       int
	Succeeded, Failed, TimedOut int
	Starts                      int
	LateP50, LateP99, LateMax   time.Duration
	// Slow are the seconds of the interval whose crowds had starts more
	// than slowStart late, the most such starts first (at most maxSlow):
	// where a p99 over the bound comes from.
	Slow []SlowSecond
	// Reached is how many jobs of first attempts reached the worker's
	// handler in the interval, and ReachedP50... how late: when the
	// worker took the job, minus the occurrence. A start's lateness ends
	// when its pass begins; this one also holds the rest of the pass
	// (claim, writes, push to Redis) and the worker's take, which
	// HandOffP50 and HandOffP99 measure alone: when the worker took the
	// job, minus the attempt's start.
	Reached                            int
	ReachedP50, ReachedP99, ReachedMax time.Duration
	HandOffP50, HandOffP99             time.Duration
	// Outcomes is how many outcomes serve received in the interval, and
	// Deferred how many times one was kept for a later pass because a
	// transaction held its model (serve's counters).
	Outcomes, Deferred  int
	ServeRSS, WorkerRSS int64
	RedisMemory         int64
	Relations           []Relation
	Tables              []TableStats
	TotalBytes          int64 // of every relation in Relations
	// WAL is what the server wrote in the interval: checkpoints (those
	// its WAL volume requested too), WAL bytes and full-page images.
	WAL WALActivity
}

// Relation is a table or an index and its size in bytes (a table's
// includes its TOAST, not its indexes).
type Relation struct {
	Name  string
	Index bool
	Bytes int64
}

// TableStats is a table's line of pg_stat_user_tables.
type TableStats struct {
	Name                      string
	Live, Dead                int64
	Autovacuums, Autoanalyzes int64
}

// SoakResult holds the figures of a soak run.
type SoakResult struct {
	Models int
	// BurstRate is the cycles/s of the burst measured first (0 if Rate
	// was given).
	BurstRate float64
	// Period is how often each model is due; Rate = Models / Period.
	Period   time.Duration
	Rate     float64
	Duration time.Duration
	Horizon  time.Duration
	// History is how many attempts were written before the run, one
	// Horizon of them (prefillHistory).
	History int64
	// FailPercent and HangPercent are the worker's.
	FailPercent, HangPercent float64
	Samples                  []SoakSample
	// Window is the span compared at the start and at the end: 5
	// minutes, or a fifth of the run if shorter.
	Window time.Duration
	// CyclesDriftPct and P99DriftPct compare the last Window with the
	// first: (last - first) / first, in percent.
	CyclesDriftPct, P99DriftPct float64
	// GrowthSpan is the end of the run over which SizeGrowthPct is
	// measured: 10 minutes, or a third of the run if shorter.
	GrowthSpan    time.Duration
	SizeGrowthPct float64
	// WorstP99 is the highest p99 lateness of a sample, and
	// WorstReachedP99 the highest p99 of the jobs reaching the worker.
	WorstP99, WorstReachedP99 time.Duration
	// TimedOutPct is the share of the attempts that ended which timed
	// out, in percent: about HangPercent, and more if outcomes were lost
	// on the way (an attempt whose outcome never arrives times out).
	TimedOutPct float64
	// The check at the end: Checked occurrences of the last Horizon (but
	// soakSlack) looked at; Missing of them without a start, Duplicates
	// starts of an occurrence beyond the first, Stuck attempts running
	// past their deadline + soakSlack, models due more than soakSlack ago
	// and not started, and models without a next run.
	Checked, Missing, Duplicates, Stuck int
}

// Lost is the sum of what the check at the end found wrong.
func (r SoakResult) Lost() int { return r.Missing + r.Duplicates + r.Stuck }

// Soak loads Models models due every Period (Models / Rate) seconds, each
// shifted by its spread so that Rate cycles a second fall due, runs
// freshen serve (history pruned after Horizon) and freshen bench worker
// (FailPercent failures, HangPercent hangs until the deadline) as child
// processes for Duration, samples every Interval, then checks in SQL that
// every occurrence of the last Horizon started exactly once and nothing is
// stuck. It returns an error if the check finds anything lost.
func (b *Bench) Soak(ctx context.Context, cfg SoakConfig) (SoakResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return SoakResult{}, err
	}
	res := SoakResult{Models: cfg.Models, Duration: cfg.Duration, Horizon: cfg.Horizon,
		FailPercent: cfg.FailPercent, HangPercent: cfg.HangPercent}
	rate := cfg.Rate
	if rate == 0 {
		b.logf("soak: measuring a burst of %d models first", cfg.BurstModels)
		burst, err := b.E2E(ctx, E2EConfig{Models: cfg.BurstModels})
		if err != nil {
			return res, fmt.Errorf("burst: %w", err)
		}
		res.BurstRate = burst.CyclesPerSec()
		rate = res.BurstRate / 2
	}
	poolCfg, pool, err := b.freshRun(ctx, "soak")
	if err != nil {
		return res, err
	}
	defer pool.Close()

	lead := 5*time.Second + time.Duration(cfg.Models)*30*time.Microsecond
	t0 := b.clock.Now().Add(lead).Truncate(time.Second)
	grid, err := b.loadSteady(ctx, pool, "s-", cfg.Models, rate, t0)
	if err != nil {
		return res, err
	}
	if res.History, err = prefillHistory(ctx, pool, grid, t0, cfg.Horizon, cfg.FailPercent); err != nil {
		return res, err
	}
	res.Period, res.Rate = grid.period, float64(cfg.Models)/grid.period.Seconds()
	b.logf("soak: %d models due every %s: %.0f cycles/s", cfg.Models, res.Period, res.Rate)

	serve, err := b.startServe(ctx, poolCfg, steadyServeFlags(cfg.Horizon)...)
	if err != nil {
		return res, err
	}
	defer serve.kill()
	reached := &reachedLines{grid: grid}
	worker, err := b.startWorkerWith(ctx, cfg.Concurrency, reached.line,
		"--fail-percent", strconv.FormatFloat(cfg.FailPercent, 'g', -1, 64),
		"--hang-percent", strconv.FormatFloat(cfg.HangPercent, 'g', -1, 64),
		"--report", grid.prefix)
	if err != nil {
		return res, err
	}
	defer worker.kill()
	if now := b.clock.Now(); now.After(t0) {
		b.logf("soak: setup ended %s after the first models were due: the first sample starts late", now.Sub(t0).Round(time.Millisecond))
	}

	wal, err := walCounters(ctx, pool)
	if err != nil {
		return res, err
	}
	metricsURL := "http://" + serve.addr + "/metrics"
	outcomeCounters := []string{"freshen_outcomes_received_total", "freshen_outcomes_deferred_total"}
	counted := make([]float64, len(outcomeCounters)) // serve's, since it started
	for at := cfg.Interval; at <= cfg.Duration; at += cfg.Interval {
		select {
		case <-b.clock.After(t0.Add(at).Sub(b.clock.Now())):
		case <-serve.done:
			return res, serve.exited()
		case <-worker.done:
			return res, worker.exited()
		case <-ctx.Done():
			return res, ctx.Err()
		}
		s, err := b.soakSample(ctx, pool, grid, t0, t0.Add(at-cfg.Interval), t0.Add(at), serve, worker)
		if err != nil {
			return res, err
		}
		s.At = at
		late, handOff := reached.take()
		s.Reached = len(late)
		s.ReachedP50, s.ReachedP99, s.ReachedMax = quantiles(late)
		s.HandOffP50, s.HandOffP99, _ = quantiles(handOff)
		walNow, err := walCounters(ctx, pool)
		if err != nil {
			return res, err
		}
		s.WAL, wal = walNow.since(wal), walNow
		countedNow, err := serveCounters(ctx, metricsURL, outcomeCounters...)
		if err != nil {
			return res, err
		}
		s.Outcomes, s.Deferred = int(countedNow[0]-counted[0]), int(countedNow[1]-counted[1])
		counted = countedNow
		res.Samples = append(res.Samples, s)
		if cfg.OnSample != nil {
			cfg.OnSample(s)
		}
	}
	res.summarize(cfg.Interval)

	end := b.clock.Now()
	from := end.Add(-cfg.Horizon + soakSlack)
	if from.Before(t0) {
		from = t0
	}
	if err := grid.check(ctx, pool, from, end, &res.Checked, &res.Missing, &res.Duplicates, &res.Stuck); err != nil {
		return res, err
	}
	if err := worker.stop(); err != nil {
		return res, err
	}
	if err := serve.stop(); err != nil {
		return res, err
	}
	if res.Lost() > 0 {
		return res, fmt.Errorf("soak: lost: of %d occurrences checked, %d without a start, %d started more than once; %d attempts or models stuck",
			res.Checked, res.Missing, res.Duplicates, res.Stuck)
	}
	return res, nil
}

// summarize computes the drifts, the growth and the worst p99 from the
// samples, each interval long.
func (r *SoakResult) summarize(interval time.Duration) {
	n := len(r.Samples)
	if n == 0 {
		return
	}
	r.Window = min(5*time.Minute, r.Duration/5)
	k := max(1, int(r.Window/interval))
	k = min(k, n)
	mean := func(ss []SoakSample, f func(SoakSample) float64) float64 {
		t := 0.0
		for _, s := range ss {
			t += f(s)
		}
		return t / float64(len(ss))
	}
	first, last := r.Samples[:k], r.Samples[n-k:]
	cycles := func(s SoakSample) float64 { return s.CyclesPerSec }
	p99 := func(s SoakSample) float64 { return float64(s.LateP99) }
	r.CyclesDriftPct = pct(mean(last, cycles), mean(first, cycles))
	r.P99DriftPct = pct(mean(last, p99), mean(first, p99))
	r.GrowthSpan = min(10*time.Minute, r.Duration/3)
	g := max(1, int(r.GrowthSpan/interval))
	base := r.Samples[max(0, n-1-g)]
	r.SizeGrowthPct = pct(float64(r.Samples[n-1].TotalBytes), float64(base.TotalBytes))
	ended, timedOut := 0, 0
	for _, s := range r.Samples {
		r.WorstP99 = max(r.WorstP99, s.LateP99)
		r.WorstReachedP99 = max(r.WorstReachedP99, s.ReachedP99)
		ended += s.Ended
		timedOut += s.TimedOut
	}
	if ended > 0 {
		r.TimedOutPct = float64(timedOut) / float64(ended) * 100
	}
}

// pct is (a - b) / b in percent, 0 if b is 0.
func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return (a - b) / b * 100
}

// reachedLines gathers, from the worker's took lines, how late the jobs of
// first attempts reached its handler: when the worker took the job, minus
// the occurrence its attempt started for (late), and minus the attempt's
// start (handOff).
type reachedLines struct {
	grid          steadyGrid
	mu            sync.Mutex
	late, handOff []time.Duration
}

// line reads one line of the worker's output.
func (r *reachedLines) line(l string) {
	t, ok := parseTook(l)
	if !ok || t.attempt != 1 {
		return
	}
	due, err := r.grid.due(t.modelID, t.started)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.late = append(r.late, t.at.Sub(due))
	r.handOff = append(r.handOff, t.at.Sub(t.started))
}

// take returns what was gathered since the last take.
func (r *reachedLines) take() (late, handOff []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	late, handOff = r.late, r.handOff
	r.late, r.handOff = nil, nil
	return late, handOff
}

// steadyGrid is how the models of loadSteady fall due: model id at
// soakAnchor + offset(id) + k * period, offsets in soak_offsets.
type steadyGrid struct {
	prefix  string
	period  time.Duration
	offsets []int64 // in seconds, by the index in the model's id
	logf    func(format string, args ...any)
}

// steadyServeFlags are the flags of freshen serve for models on a steady
// grid, with the history pruned after horizon.
func steadyServeFlags(horizon time.Duration) []string {
	return []string{"--min-interval", "1s", "--history-max-age", horizon.String(),
		"--prune-interval", (horizon / 2).String()}
}

// loadSteady loads n models named prefix + index, due every n / rate
// seconds (at least 2) from t0 on, each shifted by its spread, so that
// about rate a second fall due; it notes each model's offset in the table
// soak_offsets.
func (b *Bench) loadSteady(ctx context.Context, pool *pgxpool.Pool, prefix string, n int, rate float64, t0 time.Time) (steadyGrid, error) {
	period := max(2, int64(math.Round(float64(n)/rate)))
	g := steadyGrid{prefix: prefix, period: time.Duration(period) * time.Second, logf: b.logf}
	text := fmt.Sprintf(`{"schedule": %s, "spread": "%ds", "timeout": "%s", "retry": {"delays": ["1s", "2s"]}, "on_exhausted": "wait_next"}`,
		jsonString(dtstart(soakAnchor)+"RRULE:FREQ=SECONDLY;INTERVAL="+strconv.FormatInt(period, 10)), period-1, soakTimeout)
	policy, err := refresh.ParsePolicy([]byte(text), refresh.Limits{MinInterval: time.Second})
	if err != nil {
		return g, fmt.Errorf("soak policy: %w", err)
	}
	stored, err := json.Marshal(policy)
	if err != nil {
		return g, err
	}
	offsets := make([]int64, n)
	first := make([]time.Time, n)
	for i := range n {
		m := refresh.Model{ID: fmt.Sprintf("%s%07d", prefix, i), Policy: policy}
		offsets[i] = int64(m.SpreadOffset() / time.Second)
		at, ok := m.First(t0)
		if !ok {
			return g, fmt.Errorf("soak policy: no occurrence after %s", t0)
		}
		first[i] = at
	}
	g.offsets = offsets
	b.logf("loading %d models due every %s", n, g.period)
	if err := b.loadRows(ctx, pool, n, func(i int) (string, time.Time) {
		return fmt.Sprintf("%s%07d", prefix, i), first[i]
	}, E2EPayload, string(stored)); err != nil {
		return g, err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS soak_offsets (id text PRIMARY KEY, off_s bigint NOT NULL)`); err != nil {
		return g, fmt.Errorf("soak offsets: %w", err)
	}
	i := 0
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"soak_offsets"}, []string{"id", "off_s"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		row := []any{fmt.Sprintf("%s%07d", prefix, i), offsets[i]}
		i++
		return row, nil
	})); err != nil {
		return g, fmt.Errorf("soak offsets: %w", err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE soak_offsets`); err != nil {
		return g, fmt.Errorf("soak offsets: %w", err)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, current_schema())`, postgres.NotifyChannel); err != nil {
		return g, fmt.Errorf("notify: %w", err)
	}
	return g, nil
}

// prefillHistory writes the history the run would hold at t0 had it been
// running for a while, and returns how many attempts that is: for each
// model whose last occurrence before t0 (strictly: a model due at t0 starts
// the run) is within horizon, an attempt that started then and ended 50 ms
// later (failPercent of them failed, to be retried). Without it, the
// history is too young for retention to delete anything in the first
// minutes, which then run lighter than all the later ones.
func prefillHistory(ctx context.Context, pool *pgxpool.Pool, g steadyGrid, t0 time.Time, horizon time.Duration, failPercent float64) (int64, error) {
	tag, err := pool.Exec(ctx, `INSERT INTO attempts (started_at, deadline_at, finished_at, attempt_no,
			outcome, uid, model_id, failure)
		SELECT a.due, a.due + $5::interval, a.due + interval '50 ms', 1,
			(CASE WHEN f.failed THEN 'failure' ELSE 'success' END)::attempt_outcome, 'prefill-' || o.id, o.id,
			CASE WHEN f.failed THEN ROW(1000000000, 'retry', 'error', 'bench: planned failure')::attempt_failure END
		FROM soak_offsets o
		CROSS JOIN LATERAL (SELECT `+dueSQL+` AS due FROM (SELECT $3::timestamptz - interval '1 microsecond' AS started_at) a) a
		CROSS JOIN LATERAL (SELECT abs(hashtext(o.id)) % 10000 < $6 * 100 AS failed) f
		WHERE a.due >= $3::timestamptz - $4::interval
		ORDER BY a.due`,
		soakAnchor, g.period.Seconds(), t0, horizon, soakTimeout, failPercent)
	if err != nil {
		return 0, fmt.Errorf("soak: history: %w", err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE attempts`); err != nil {
		return 0, fmt.Errorf("soak: history: %w", err)
	}
	return tag.RowsAffected(), nil
}

// dueSQL is the occurrence an attempt a of a model of the grid whose
// offset row is o started for: the last at or before its start. Its
// parameters are $1 the anchor and $2 the period in seconds.
const dueSQL = `($1::timestamptz + make_interval(secs => o.off_s
	+ floor((extract(epoch FROM a.started_at - $1::timestamptz) - o.off_s) / $2) * $2))`

// soakSample reads what the interval from..to did and what the processes
// and tables take now.
func (b *Bench) soakSample(ctx context.Context, pool *pgxpool.Pool, g steadyGrid, t0, from, to time.Time, serve, worker *child) (SoakSample, error) {
	var s SoakSample
	err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE outcome = 'success'),
			count(*) FILTER (WHERE outcome = 'failure'), count(*) FILTER (WHERE outcome = 'timeout'), count(*)
		FROM attempts WHERE finished_at >= $1 AND finished_at < $2`, from, to).Scan(&s.Succeeded, &s.Failed, &s.TimedOut, &s.Ended)
	if err != nil {
		return s, fmt.Errorf("soak sample: %w", err)
	}
	s.CyclesPerSec = float64(s.Ended) / to.Sub(from).Seconds()
	if err := g.lateness(ctx, pool, t0, from, to, &s); err != nil {
		return s, err
	}
	if s.ServeRSS, err = residentSet(serve.pid()); err != nil {
		return s, err
	}
	if s.WorkerRSS, err = residentSet(worker.pid()); err != nil {
		return s, err
	}
	info, err := b.rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		return s, fmt.Errorf("soak sample: Redis memory: %w", err)
	}
	s.RedisMemory, _ = strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
	if s.Relations, s.TotalBytes, err = relations(ctx, pool); err != nil {
		return s, err
	}
	s.Tables, err = tableStats(ctx, pool)
	return s, err
}

// SlowSecond is a second of a sample whose crowd had starts more than
// slowStart late: At is its occurrence, from the start of the load.
type SlowSecond struct {
	At    time.Duration
	Count int
}

const (
	slowStart = 100 * time.Millisecond // the soak's bound on the p99
	maxSlow   = 5
)

// lateness sets, in s, how many first attempts started from..to and the
// median, 99th percentile and max of their lateness (nearest rank), and
// the seconds of the crowds with starts later than slowStart; t0 is the
// start of the load. It reads the starts and computes each one's
// occurrence from the offsets the grid keeps (a join with soak_offsets in
// PostgreSQL cost about two CPU seconds a minute at 1,000,000 models,
// taken from what it measured).
func (g steadyGrid) lateness(ctx context.Context, pool *pgxpool.Pool, t0, from, to time.Time, s *SoakSample) error {
	rows, err := pool.Query(ctx, `SELECT model_id, started_at FROM attempts
		WHERE attempt_no = 1 AND started_at >= $1 AND started_at < $2`, from, to)
	if err != nil {
		return fmt.Errorf("lateness: %w", err)
	}
	var late []time.Duration
	slow := map[time.Time]int{}
	var id string
	var started time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &started}, func() error {
		due, err := g.due(id, started)
		if err != nil {
			return err
		}
		d := started.Sub(due)
		late = append(late, d)
		if d > slowStart {
			slow[due]++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lateness: %w", err)
	}
	s.Starts = len(late)
	s.LateP50, s.LateP99, s.LateMax = quantiles(late)
	s.Slow = slowest(slow, t0)
	return nil
}

// slowest returns the maxSlow seconds of counts with the most starts, the
// most first (the earliest of a tie first), as offsets from t0.
func slowest(counts map[time.Time]int, t0 time.Time) []SlowSecond {
	out := make([]SlowSecond, 0, len(counts))
	for at, n := range counts {
		out = append(out, SlowSecond{At: at.Sub(t0), Count: n})
	}
	slices.SortFunc(out, func(a, b SlowSecond) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return cmp.Compare(a.At, b.At)
	})
	return out[:min(len(out), maxSlow)]
}

// due returns the occurrence of the grid that model id started at
// started for: the last at or before it.
func (g steadyGrid) due(id string, started time.Time) (time.Time, error) {
	index, ok := strings.CutPrefix(id, g.prefix)
	i, err := strconv.Atoi(index)
	if !ok || err != nil || i < 0 || i >= len(g.offsets) {
		return time.Time{}, fmt.Errorf("model %q is not one of the grid's", id)
	}
	first := soakAnchor.Add(time.Duration(g.offsets[i]) * time.Second)
	k := started.Sub(first) / g.period
	if started.Before(first.Add(k * g.period)) {
		k-- // started before first: the division rounded toward zero
	}
	return first.Add(k * g.period), nil
}

// check counts, for the occurrences of the grid from..end-soakSlack, those
// without a start in their period (but for models busy with a failure, a
// hang or a retry near it), the extra starts of an occurrence, and what
// is stuck: attempts running past their deadline + soakSlack, models due
// more than soakSlack ago and not started, models without a next run (the
// policy waits for the next occurrence when the retries run out, so no
// model is ever disabled).
func (g steadyGrid) check(ctx context.Context, pool *pgxpool.Pool, from, end time.Time, checked, missing, duplicates, stuck *int) error {
	until := end.Add(-soakSlack)
	p := g.period.Seconds()
	occ := `WITH occ AS (
			SELECT o.id, $1::timestamptz + make_interval(secs => o.off_s + k * $2) AS at
			FROM soak_offsets o, generate_series(
				ceil((extract(epoch FROM $3::timestamptz - $1::timestamptz) - o.off_s) / $2)::bigint,
				floor((extract(epoch FROM $4::timestamptz - $1::timestamptz) - o.off_s) / $2)::bigint) k
			WHERE o.id LIKE $5
		), missing AS (
			SELECT occ.*, NOT EXISTS (
				SELECT FROM attempts a WHERE a.model_id = occ.id
					AND a.started_at >= occ.at AND a.started_at < occ.at + make_interval(secs => $2))
			AND NOT EXISTS (
				SELECT FROM attempts a WHERE a.model_id = occ.id
					AND (a.outcome IS DISTINCT FROM 'success' OR a.attempt_no > 1)
					AND a.started_at >= occ.at - make_interval(secs => $2 + $6) AND a.started_at < occ.at + make_interval(secs => $2)) AS lost
			FROM occ
		)`
	args := []any{soakAnchor, p, from, until, g.prefix + "%", soakSlack.Seconds()}
	if err := pool.QueryRow(ctx, occ+` SELECT count(*), count(*) FILTER (WHERE lost) FROM missing`, args...).Scan(checked, missing); err != nil {
		return fmt.Errorf("check starts: %w", err)
	}
	if *missing > 0 {
		// A few examples, with the attempts of their model around them.
		rows, err := pool.Query(ctx, occ+` SELECT m.id || ' due ' || m.at || ': ' || coalesce((
				SELECT string_agg(format('#%s %s..%s %s', a.attempt_no, a.started_at, a.finished_at, a.outcome), '; ' ORDER BY a.started_at)
				FROM attempts a WHERE a.model_id = m.id
					AND a.started_at >= m.at - make_interval(secs => 2 * $2 + $6) AND a.started_at < m.at + make_interval(secs => 2 * $2)), 'no attempt near it')
				|| (SELECT format('; %s attempts in all, %s..%s; the model: refresh_at %s, last success %s, attempt %s',
					count(*), min(a.started_at), max(a.started_at), md.refresh_at, md.last_success_at, md.attempt_uid)
					FROM models md LEFT JOIN attempts a ON a.model_id = md.id WHERE md.id = m.id
					GROUP BY md.refresh_at, md.last_success_at, md.attempt_uid)
			FROM missing m WHERE lost ORDER BY m.at LIMIT 3`, args...)
		if err != nil {
			return fmt.Errorf("check starts: %w", err)
		}
		examples, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("check starts: %w", err)
		}
		for _, e := range examples {
			g.logf("soak: occurrence without a start: %s", e)
		}
	}
	err := pool.QueryRow(ctx, `SELECT count(*) FROM (
			SELECT a.model_id, `+dueSQL+` AS due
			FROM attempts a JOIN soak_offsets o ON o.id = a.model_id
			WHERE a.attempt_no = 1 AND a.started_at >= $3 AND o.id LIKE $4
			GROUP BY 1, 2 HAVING count(*) > 1) d`, soakAnchor, p, from, g.prefix+"%").Scan(duplicates)
	if err != nil {
		return fmt.Errorf("check duplicates: %w", err)
	}
	err = pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM attempts WHERE outcome IS NULL AND deadline_at < $1 AND model_id LIKE $3)
			+ (SELECT count(*) FROM models WHERE attempt_uid IS NOT NULL AND deadline_at < $1 AND id LIKE $3)
			+ (SELECT count(*) FROM models WHERE attempt_uid IS NULL AND (refresh_at IS NULL OR refresh_at < $2) AND id LIKE $3)`,
		end.Add(-soakSlack), until, g.prefix+"%").Scan(stuck)
	if err != nil {
		return fmt.Errorf("check stuck: %w", err)
	}
	return nil
}

// freshRun creates the schema of a run called name and a pool on it, and
// empties the harness's Redis keys. The pool's queries take no parallel
// workers: the harness's samples use one CPU at most, beside what they
// measure.
func (b *Bench) freshRun(ctx context.Context, name string) (*pgxpool.Config, *pgxpool.Pool, error) {
	poolCfg, err := b.newSchema(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	harness := poolCfg.Copy()
	harness.ConnConfig.RuntimeParams["max_parallel_workers_per_gather"] = "0"
	pool, err := pgxpool.NewWithConfig(ctx, harness)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to database: %w", err)
	}
	b.clearRedis(ctx)
	return poolCfg, pool, nil
}

// relations returns the tables and indexes of the run's schema (but the
// harness's own, soak_offsets) with their sizes, and their total.
func relations(ctx context.Context, pool *pgxpool.Pool) ([]Relation, int64, error) {
	rows, err := pool.Query(ctx, `SELECT c.relname, c.relkind = 'i',
			CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i') AND c.relname NOT LIKE 'soak_offsets%'
		ORDER BY c.relkind DESC, c.relname`)
	if err != nil {
		return nil, 0, fmt.Errorf("sizes: %w", err)
	}
	var total int64
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Relation, error) {
		var r Relation
		err := row.Scan(&r.Name, &r.Index, &r.Bytes)
		total += r.Bytes
		return r, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("sizes: %w", err)
	}
	return rels, total, nil
}

// tableStats returns pg_stat_user_tables of models, attempts, outbox and
// audit in the run's schema.
func tableStats(ctx context.Context, pool *pgxpool.Pool) ([]TableStats, error) {
	rows, err := pool.Query(ctx, `SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, autoanalyze_count
		FROM pg_stat_user_tables WHERE schemaname = current_schema()
			AND relname IN ('models', 'attempts', 'outbox', 'audit') ORDER BY relname`)
	if err != nil {
		return nil, fmt.Errorf("table statistics: %w", err)
	}
	stats, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableStats, error) {
		var t TableStats
		err := row.Scan(&t.Name, &t.Live, &t.Dead, &t.Autovacuums, &t.Autoanalyzes)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("table statistics: %w", err)
	}
	return stats, nil
}
