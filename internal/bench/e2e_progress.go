package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/freshen-dev/freshen/refresh"
)

// E2EPayload is the payload of the models of E2E: about 200 bytes, the
// size of a typical job description.
const E2EPayload = `{"input_url": "https://storage.example.com/exports/customers/2026/03/02/part-00017.csv.gz", ` +
	`"output_table": "analytics.customer_daily", "format": "csv", "compression": "gzip", "owner": "team-data"}`

// e2eProgress is how E2E follows a run: the events stream (eventReader),
// or serve's metrics when the stream leaves out started or succeeded
// (metricsReader).
type e2eProgress interface {
	run(ctx context.Context) error
	// finished is closed once every model has succeeded.
	finished() <-chan struct{}
	counts() (started, succeeded int)
	times() (firstStart, firstSuccess, doneAt time.Time, duplicates int)
	// xreads is how many XREADs it sent to Redis.
	xreads() int64
}

func (r *eventReader) finished() <-chan struct{} { return r.done }
func (r *eventReader) xreads() int64             { return r.reads.Load() }

// metricsPoll is how often metricsReader reads serve's metrics.
const metricsPoll = 20 * time.Millisecond

// metricsReader reads serve's counters of attempts started and succeeded
// (freshen_attempts_started_total, freshen_attempts_succeeded_total) every
// metricsPoll: when each first moved, and when the successes reached want.
// A success is counted once its outcome is applied, before its event would
// reach the stream.
type metricsReader struct {
	url   string
	want  int
	clock refresh.Clock
	done  chan struct{}

	mu                               sync.Mutex
	started, succeeded               int
	firstStart, firstSuccess, doneAt time.Time
}

func newMetricsReader(addr string, want int, clock refresh.Clock) *metricsReader {
	return &metricsReader{url: "http://" + addr + "/metrics", want: want, clock: clock, done: make(chan struct{})}
}

func (r *metricsReader) finished() <-chan struct{} { return r.done }
func (r *metricsReader) xreads() int64             { return 0 }

func (r *metricsReader) counts() (started, succeeded int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started, r.succeeded
}

func (r *metricsReader) times() (firstStart, firstSuccess, doneAt time.Time, duplicates int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstStart, r.firstSuccess, r.doneAt, 0
}

// run reads until ctx ends, and returns nil then, or the error of a read.
func (r *metricsReader) run(ctx context.Context) error {
	for ctx.Err() == nil {
		started, succeeded, err := r.read(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errStarting):
			started, succeeded = 0, 0
		case err != nil:
			return err
		}
		now := r.clock.Now()
		r.mu.Lock()
		r.started, r.succeeded = started, succeeded
		if started > 0 && r.firstStart.IsZero() {
			r.firstStart = now
		}
		if succeeded > 0 && r.firstSuccess.IsZero() {
			r.firstSuccess = now
		}
		if succeeded >= r.want && r.doneAt.IsZero() {
			r.doneAt = now
			close(r.done)
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-r.clock.After(metricsPoll):
		}
	}
	return nil
}

// errStarting is read's error while serve answers 503: it starts its
// loops, and its API, once the database and Redis answer.
var errStarting = errors.New("serve is starting")

// read returns serve's counters of attempts started and succeeded.
func (r *metricsReader) read(ctx context.Context) (started, succeeded int, err error) {
	v, err := serveCounters(ctx, r.url, "freshen_attempts_started_total", "freshen_attempts_succeeded_total")
	if err != nil {
		return 0, 0, err
	}
	return int(v[0]), int(v[1]), nil
}

// serveCounters reads the counters named from serve's metrics at url, in
// order (0 for one serve does not show); errStarting while serve starts.
func serveCounters(ctx context.Context, url string, names ...string) ([]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Uncompressed: compressing the page 50 times a second would be the
	// bench's work counted in serve's CPU.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read serve's metrics: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		return nil, errStarting
	default:
		return nil, fmt.Errorf("read serve's metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read serve's metrics: %w", err)
	}
	v := make([]float64, len(names))
	for i, name := range names {
		if f := families[name]; f != nil && len(f.GetMetric()) > 0 {
			v[i] = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return v, nil
}

// newProgress returns what follows a run of want models whose serve runs
// with --events events ("" for all) and listens on addr: the events
// stream, unless it lacks started or succeeded or metrics is set.
func (b *Bench) newProgress(events string, metrics bool, addr string, want int) (e2eProgress, error) {
	names := refresh.EventNames{}
	if events != "" {
		var err error
		if names, err = refresh.ParseEventNames(events); err != nil {
			return nil, fmt.Errorf("bench: e2e: Events: %w", err)
		}
	}
	if !metrics && names.Has(refresh.LifecycleStarted) && names.Has(refresh.LifecycleSucceeded) {
		return newEventReader(b.rdb, b.keys.events(), want, b.clock), nil
	}
	return newMetricsReader(addr, want, b.clock), nil
}

// ColumnSize is the average size of a column of a table, as stored
// (pg_column_size: compressed, without the tuple header), over its rows.
type ColumnSize struct {
	Name  string
	Bytes float64
}

// E2ESizes is what the tables of a run take at its end.
type E2ESizes struct {
	// ModelBytes and AttemptBytes are the bytes of models and attempts,
	// heap, indexes and TOAST (pg_total_relation_size), per model and per
	// row of the history.
	ModelBytes, AttemptBytes float64
	// ModelHeapBytes and ModelIndexBytes are the parts of ModelBytes in
	// the table's main fork and in its indexes (the rest: TOAST and the
	// free space and visibility maps).
	ModelHeapBytes, ModelIndexBytes float64
	// CompactModelBytes is ModelBytes once VACUUM FULL has rewritten the
	// table and its indexes without the dead versions of the rows: what
	// the models take at the least.
	CompactModelBytes float64
	// ModelRowBytes is the average size of a row of models
	// (pg_column_size of the row: its live version, header included).
	ModelRowBytes float64
	// ModelColumns and AttemptColumns are the averages of each column.
	ModelColumns, AttemptColumns []ColumnSize
}

// sizes measures what models and attempts take, on a connection of its
// own, then again after VACUUM FULL models.
func (b *Bench) sizes(ctx context.Context, cfg *pgxpool.Config) (E2ESizes, error) {
	var s E2ESizes
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return s, fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	var models, attempts, modelBytes, attemptBytes, heapBytes, indexBytes int64
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM models), (SELECT count(*) FROM attempts),
			pg_total_relation_size('models'), pg_total_relation_size('attempts'),
			pg_relation_size('models'), pg_indexes_size('models'),
			(SELECT coalesce(avg(pg_column_size(m.*)), 0) FROM models m)`).
		Scan(&models, &attempts, &modelBytes, &attemptBytes, &heapBytes, &indexBytes, &s.ModelRowBytes)
	if err != nil {
		return s, fmt.Errorf("sizes: %w", err)
	}
	if models > 0 {
		s.ModelBytes = float64(modelBytes) / float64(models)
		s.ModelHeapBytes, s.ModelIndexBytes = float64(heapBytes)/float64(models), float64(indexBytes)/float64(models)
	}
	if attempts > 0 {
		s.AttemptBytes = float64(attemptBytes) / float64(attempts)
	}
	if _, err := conn.Exec(ctx, `VACUUM FULL models`); err != nil {
		return s, fmt.Errorf("sizes: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size('models')`).Scan(&modelBytes); err != nil {
		return s, fmt.Errorf("sizes: %w", err)
	}
	if models > 0 {
		s.CompactModelBytes = float64(modelBytes) / float64(models)
	}
	if s.ModelColumns, err = columnSizes(ctx, conn, "models"); err != nil {
		return s, err
	}
	if s.AttemptColumns, err = columnSizes(ctx, conn, "attempts"); err != nil {
		return s, err
	}
	return s, nil
}

// columnSizes returns the average pg_column_size of each column of table,
// in the order of the table (0 for a table without rows).
func columnSizes(ctx context.Context, conn *pgx.Conn, table string) ([]ColumnSize, error) {
	rows, err := conn.Query(ctx, `SELECT attname FROM pg_attribute
		WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	avgs := make([]string, len(names))
	for i, n := range names {
		avgs[i] = fmt.Sprintf("coalesce(avg(pg_column_size(%s)), 0)::float8", pgx.Identifier{n}.Sanitize())
	}
	vals := make([]float64, len(names))
	dest := make([]any, len(names))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := conn.QueryRow(ctx, `SELECT `+strings.Join(avgs, ", ")+` FROM `+pgx.Identifier{table}.Sanitize()).Scan(dest...); err != nil {
		return nil, fmt.Errorf("column sizes of %s: %w", table, err)
	}
	out := make([]ColumnSize, len(names))
	for i, n := range names {
		out[i] = ColumnSize{Name: n, Bytes: vals[i]}
	}
	return out, nil
}
