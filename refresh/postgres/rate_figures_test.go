package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// The figures of the rate limits (docs/policy.md), printed, not
// asserted: they run on the real clock for seconds each. Run them with
//
//	FRESHEN_RATE_FIGURES=1 scripts/with-servers.sh go test -count=1 -v -timeout 20m \
//		-run 'TestRateFigures' ./refresh/postgres/

// figures skips the test unless FRESHEN_RATE_FIGURES is set.
func figures(t *testing.T) {
	t.Helper()
	if os.Getenv("FRESHEN_RATE_FIGURES") == "" {
		t.Skip("set FRESHEN_RATE_FIGURES=1 to print the figures of the rate limits")
	}
}

// statements counts the statements a pool sends (a query, an exec, each
// query of a batch), and keeps their text if keep is set.
type statements struct {
	n    atomic.Int64
	keep bool
	mu   sync.Mutex
	text []string
}

func (c *statements) add(sql string) {
	c.n.Add(1)
	if c.keep {
		c.mu.Lock()
		c.text = append(c.text, sql)
		c.mu.Unlock()
	}
}

func (c *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add(d.SQL)
	return ctx
}
func (c *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.add(d.SQL)
}
func (c *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// tracedStore returns a store on a pool of its own on b's schema whose
// statements st counts.
func tracedStore(t *testing.T, b bundle, st *statements) *postgres.Store {
	t.Helper()
	cfg := b.pool.Config()
	cfg.ConnConfig.Tracer = st
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return postgres.New(pool)
}

// seedDue inserts n idle models due an hour before at, named prefix
// followed by a number of six digits, in id order; keys, if any, are
// their rate_keys in turn.
func seedDue(t *testing.T, b bundle, prefix string, n int, at time.Time, keys []string) {
	t.Helper()
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at, rate_key)
		SELECT $1 || lpad(i::text, 6, '0'), 'tables', '{"input_url": "https://example.com/a.csv"}',
			(SELECT freshen_policy_id('{"timeout": "1h", "retry": {"delays": ["1m"], "jitter": 0}, "on_exhausted": "disable"}')),
			$2::timestamptz - interval '1 day', $2::timestamptz - interval '1 hour' + i * interval '1 microsecond',
			CASE WHEN cardinality($4::text[]) > 0 THEN ($4::text[])[1 + i % cardinality($4::text[])] END
		FROM generate_series(1, $3::int) AS i`, prefix, at, n, keys)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `VACUUM ANALYZE models`)
	require.NoError(t, err)
}

// run is one run of a scheduler on the real clock.
type run struct {
	started, passes int
	elapsed         time.Duration
}

// runScheduler runs a scheduler on store (Start) from now until done
// reports true of the starts so far, or for at most d, and returns what
// it did.
func runScheduler(t *testing.T, store *postgres.Store, tenants []string, d time.Duration, done func(started int) bool) run {
	t.Helper()
	clock := refresh.SystemClock{}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var r run
	cfg := refresh.SchedulerConfig{Store: store, Queue: memory.NewQueue(clock), Clock: clock,
		TickedFunc: func(res refresh.TickResult, err error) {
			mu.Lock()
			defer mu.Unlock()
			r.passes++
			r.started += res.Started
			if err == nil && done(r.started) {
				cancel()
			}
		}}
	if tenants != nil {
		cfg.TenantsFunc = func() []string { return tenants }
	}
	s, err := refresh.NewScheduler(cfg)
	require.NoError(t, err)
	start := clock.Now()
	require.NoError(t, s.Start(ctx))
	mu.Lock()
	defer mu.Unlock()
	r.elapsed = clock.Now().Sub(start)
	return r
}

// With 100 rate limits (of rate_key, one key per 1,000 models) and
// 100,000 models due: how many start per second and how many statements
// the scheduler's store sends per 1,000 starts, with no limit, with limits
// that admit every start (max_starts 100,000 per 1s each), and with limits
// that hold most back (20 per 1s each: 2,000 starts/s in all, for 10 s).
func TestRateFigures100Limits(t *testing.T) {
	figures(t)
	const models = 100_000
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("host-%02d.example.com", i)
	}
	for _, c := range []struct {
		name      string
		maxStarts int
		for_      time.Duration
	}{
		{"no limit", 0, time.Minute},
		{"100 limits admitting all", 100_000, time.Minute},
		{"100 limits of 20/s", 20, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t)
			now := refresh.SystemClock{}.Now()
			seedDue(t, b, "model-", models, now, keys)
			if c.maxStarts > 0 {
				for _, k := range keys {
					_, err := b.store.PutLimit(context.Background(), refresh.Limit{Kind: refresh.LimitRateKey, Key: k,
						MaxStarts: c.maxStarts, Per: refresh.Duration(time.Second)}, false)
					require.NoError(t, err)
				}
			}
			var st statements
			r := runScheduler(t, tracedStore(t, b, &st), nil, c.for_, func(n int) bool { return n >= models })
			n := st.n.Load()
			t.Logf("%s: %d starts in %.2fs (%.0f starts/s), %d passes, %d statements (%.1f per 1,000 starts)",
				c.name, r.started, r.elapsed.Seconds(), float64(r.started)/r.elapsed.Seconds(), r.passes, n,
				float64(n)*1000/float64(max(r.started, 1)))
		})
	}
}

// The fair turns of issue 30: 100,000 models of tenant a- due, and 10 of
// b- due after them, under a limit of 1,000 starts/s of their queue; the
// tenants are a- and b- (TenantsFunc, as the prefixes of tokens). When b-'s
// 10 have started (the last of them, from the scheduler's start), and a-'s
// starts per second over the run, against the same run without b-.
func TestRateFiguresFairness(t *testing.T) {
	figures(t)
	const runFor = 10 * time.Second
	for _, withB := range []bool{false, true} {
		t.Run(fmt.Sprintf("b- %v", withB), func(t *testing.T) {
			b := setup(t)
			ctx := context.Background()
			now := refresh.SystemClock{}.Now()
			seedDue(t, b, "a-", 100_000, now, nil)
			if withB {
				seedDue(t, b, "b-", 10, now.Add(30*time.Minute), nil)
			}
			_, err := b.store.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 1000, Per: refresh.Duration(time.Second)}, false)
			require.NoError(t, err)
			var st statements
			start := refresh.SystemClock{}.Now()
			r := runScheduler(t, tracedStore(t, b, &st), []string{"a-", "b-"}, runFor, func(int) bool { return false })
			var aStarted int
			var bLast *time.Time
			var bStarted int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE id LIKE 'a-%' AND started_at < $1),
					count(*) FILTER (WHERE id LIKE 'b-%'), max(started_at) FILTER (WHERE id LIKE 'b-%')
				FROM models WHERE started_at IS NOT NULL`, start.Add(runFor)).Scan(&aStarted, &bStarted, &bLast))
			line := fmt.Sprintf("b- %v: a- %d starts in %s (%.0f/s), %d passes, %d statements", withB, aStarted, runFor,
				float64(aStarted)/runFor.Seconds(), r.passes, st.n.Load())
			if withB {
				line += fmt.Sprintf("; b- %d of 10 started", bStarted)
				if bLast != nil {
					line += fmt.Sprintf(", the last %.2fs after the start", bLast.Sub(start).Seconds())
				}
			}
			var waiting int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM models WHERE waiting_for_slot`).Scan(&waiting))
			t.Logf("%s; %d models waiting at the end", line, waiting)
		})
	}
}

// How long a pass of DefaultBatchSize takes when a full rate limit holds
// back all of its models, each of which it marks waiting: a backlog of
// 100,000 models under no tenant prefix, which the claim never leaves out.
func TestRateFiguresMarking(t *testing.T) {
	figures(t)
	b := setup(t)
	ctx := context.Background()
	now := refresh.SystemClock{}.Now()
	seedDue(t, b, "a-", 100_000, now, nil)
	l := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 1000, Per: refresh.Duration(time.Hour)}
	_, err := b.store.PutLimit(ctx, l, false)
	require.NoError(t, err)
	var st statements
	store := tracedStore(t, b, &st)
	clock := refresh.NewVirtualClock(now)
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: memory.NewQueue(clock), Clock: clock})
	require.NoError(t, err)
	for i := range 10 {
		start := refresh.SystemClock{}.Now()
		before := st.n.Load()
		res, err := s.RunOnce(ctx)
		require.NoError(t, err)
		t.Logf("pass %d: %d claimed, %d started, %d waiting, in %s, %d statements", i, res.Claimed, res.Started, res.Waiting,
			refresh.SystemClock{}.Now().Sub(start).Round(time.Millisecond), st.n.Load()-before)
	}
}
