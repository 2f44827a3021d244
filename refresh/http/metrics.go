package http

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freshen-dev/freshen/refresh"
)

// newRegistry returns a registry of the Go runtime and process collectors,
// counters over m, m's Observer if it is a collector (see Histograms), the
// state gauges of state if set (else gauges over m's Overdue and
// WaitingForSlot), and extra.
func newRegistry(m *refresh.Metrics, state *stateCollector, extra []prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "freshen", Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		counter("scheduler_ticks_total", "Scheduler passes.", &m.Ticks),
		counter("attempts_started_total", "Attempts started.", &m.Started),
		counter("attempts_timed_out_total", "Attempts that reached their deadline.", &m.TimedOut),
		counter("attempts_succeeded_total", "Attempts that succeeded.", &m.Succeeded),
		counter("attempts_failed_total", "Attempts that failed, timeouts included.", &m.Failed),
		counter("retries_planned_total", "Failures that planned a retry or a new round.", &m.Retried),
		counter("models_disabled_total", "Failures that disabled their model.", &m.Disabled),
		counter("outcomes_received_total", "Outcomes received from workers.", &m.Outcomes),
		counter("outcomes_stale_total", "Outcomes fenced off: late, duplicated, superseded or for an unknown model.", &m.Stale),
		counter("loop_errors_total", "Loop passes and publishes that failed and were retried or logged.", &m.Errors),
		counter("outcomes_deferred_total", "Outcomes kept for a later pass because another transaction held their model, once per pass.", &m.Deferred),
		counter("outcomes_dead_lettered_total", "Outcomes the store refused, set aside on the dead-letter list.", &m.DeadLettered),
		counter("attempts_unchanged_total", "Successes that said the data did not change (counted in attempts_succeeded_total too).", &m.Unchanged),
		counter("attempts_snoozed_total", "Attempts that ended with a snooze.", &m.Snoozed),
		counter("starts_skipped_total", "Starts skipped by the catch-up window.", &m.Skipped),
		counter("debounces_total", "Debounce windows that took effect.", &m.Debounced),
		counter("triggers_total", "Trigger events, each trigger of a debounce window included.", &m.Triggers),
		counter("slot_waits_total", "Waits of due models for a limit (a concurrency slot or a rate limit's start), one per wait.", &m.SlotWaits),
		counter("freshness_lost_total", "Freshness episodes opened: models that became overdue.", &m.FreshnessLost),
		counter("freshness_restored_total", "Freshness episodes ended by a success.", &m.FreshnessRestored),
		prunedCollector{m},
		limitCollector{m},
	)
	if c, ok := m.Observer.(prometheus.Collector); ok {
		reg.MustRegister(c)
	}
	if state != nil {
		reg.MustRegister(state)
	} else {
		gauge := func(name, help string, v *atomic.Int64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "freshen", Name: name, Help: help},
				func() float64 { return float64(v.Load()) })
		}
		reg.MustRegister(
			gauge("models_overdue", "Models whose freshness episode is open.", &m.Overdue),
			gauge("models_waiting_for_slot", "Models due and waiting for a concurrency slot.", &m.WaitingForSlot),
		)
	}
	reg.MustRegister(extra...)
	return reg
}

// prunedDesc describes freshen_history_pruned_total.
var prunedDesc = prometheus.NewDesc("freshen_history_pruned_total",
	"Attempts deleted from the history by the retention loop, by rule: age (older than the maximum age) or count (beyond the number kept per model).",
	[]string{"rule"}, nil)

// prunedCollector exports the history pruning counters of a Metrics.
type prunedCollector struct{ m *refresh.Metrics }

func (c prunedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- prunedDesc }

func (c prunedCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(prunedDesc, prometheus.CounterValue, float64(c.m.HistoryPrunedByAge.Load()), "age")
	ch <- prometheus.MustNewConstMetric(prunedDesc, prometheus.CounterValue, float64(c.m.HistoryPrunedByCount.Load()), "count")
}

// The series of the limits the scheduler met (refresh.Metrics.LimitStats).
var (
	limitHeldDesc = prometheus.NewDesc("freshen_limit_held_total",
		"Starts a limit held back, once per wait, by limit (kind:key).", []string{"limit"}, nil)
	limitWaitDesc = prometheus.NewDesc("freshen_limit_wait_seconds",
		"How long the longest current waiter of a limit has waited, as of the last scheduler pass that saw the limit, by limit (kind:key).", []string{"limit"}, nil)
)

// limitCollector exports what the scheduler saw of each limit.
type limitCollector struct{ m *refresh.Metrics }

func (c limitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- limitHeldDesc
	ch <- limitWaitDesc
}

func (c limitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.m.LimitStats() {
		ch <- prometheus.MustNewConstMetric(limitHeldDesc, prometheus.CounterValue, float64(st.Held), st.Limit)
		ch <- prometheus.MustNewConstMetric(limitWaitDesc, prometheus.GaugeValue, st.Wait.Seconds(), st.Limit)
	}
}

// Histograms is a refresh.Observer that keeps Prometheus histograms, in
// seconds: freshen_start_lateness_seconds, freshen_attempt_duration_seconds
// and freshen_loop_pass_duration_seconds{loop}. Set it as the Observer of
// the Metrics a Server exports, which then registers it. Observations do
// not allocate.
type Histograms struct {
	lateness prometheus.Histogram
	attempt  prometheus.Histogram
	passVec  *prometheus.HistogramVec
	pass     [3]prometheus.Observer // by refresh.Loop
}

var _ refresh.Observer = (*Histograms)(nil)

// NewHistograms returns empty histograms.
func NewHistograms() *Histograms {
	h := &Histograms{
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "freshen", Name: "start_lateness_seconds",
			Help:    "How long after its refresh_at each attempt started.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}),
		attempt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "freshen", Name: "attempt_duration_seconds",
			Help:    "Time from an attempt's start to the arrival of the outcome that ended it (success, failure, snooze).",
			Buckets: []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 86400},
		}),
		passVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "freshen", Name: "loop_pass_duration_seconds",
			Help:    "Length of the loop passes that did work, by loop: scheduler, consumer, prune.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"loop"}),
	}
	for _, l := range []refresh.Loop{refresh.LoopScheduler, refresh.LoopConsumer, refresh.LoopPrune} {
		h.pass[l] = h.passVec.WithLabelValues(l.String())
	}
	return h
}

// ObserveStartLateness adds a start's lateness.
func (h *Histograms) ObserveStartLateness(d time.Duration) { h.lateness.Observe(d.Seconds()) }

// ObserveAttemptDuration adds an attempt's duration.
func (h *Histograms) ObserveAttemptDuration(d time.Duration) { h.attempt.Observe(d.Seconds()) }

// ObservePass adds the length of a pass of loop.
func (h *Histograms) ObservePass(loop refresh.Loop, d time.Duration) {
	if int(loop) < len(h.pass) {
		h.pass[loop].Observe(d.Seconds())
	}
}

// Describe implements prometheus.Collector.
func (h *Histograms) Describe(ch chan<- *prometheus.Desc) {
	h.lateness.Describe(ch)
	h.attempt.Describe(ch)
	h.passVec.Describe(ch)
}

// Collect implements prometheus.Collector.
func (h *Histograms) Collect(ch chan<- prometheus.Metric) {
	h.lateness.Collect(ch)
	h.attempt.Collect(ch)
	h.passVec.Collect(ch)
}

// ModelCounter counts models by state, overall and for the maxQueues
// queues with the most models; refresh/postgres and refresh/memory
// implement it.
type ModelCounter interface {
	CountModels(ctx context.Context, maxQueues int) (refresh.ModelCounts, map[string]refresh.ModelCounts, error)
}

// Lengths are the lengths of the queue's lists.
type Lengths struct {
	// Jobs is how many jobs wait on each queue asked for.
	Jobs map[string]int64
	// Outcomes is how many outcomes wait for a consumer; Dead is the
	// length of the dead-letter list.
	Outcomes, Dead int64
}

// StateConfig configures the state gauges of /metrics (see WithState).
type StateConfig struct {
	// Models counts the models (required).
	Models ModelCounter
	// LengthsFunc, if set, reads the lengths of the queue's lists, the
	// jobs lists of the queues Models reports.
	LengthsFunc func(ctx context.Context, queues []string) (Lengths, error)
	// Clock times the cache (required).
	Clock refresh.Clock
	// TTL is how long a reading serves the scrapes that follow (default
	// 5s): scrapes by several Prometheus servers read the store once.
	TTL time.Duration
	// Timeout bounds one reading (default 2s).
	Timeout time.Duration
	// MaxQueues bounds the queues labelled (default 100): those with the
	// most models.
	MaxQueues int
}

// WithState adds to /metrics the gauges of models by state, overall and
// per queue, and of the queue's list lengths, read at scrape time (at
// most once per cfg.TTL); the Metrics' Overdue and WaitingForSlot are set
// from the same reading.
func WithState(cfg StateConfig) Option {
	return func(s *Server) { s.state = &stateCollector{cfg: cfg} }
}

// The descriptions of the state gauges.
var (
	modelsDesc = prometheus.NewDesc("freshen_models",
		"Models by state (disabled, paused, running, failing, idle: each model in the first that applies), as last read from the store.",
		[]string{"state"}, nil)
	queueModelsDesc = prometheus.NewDesc("freshen_queue_models",
		"Models by queue and state, for the queues with the most models, as last read from the store.",
		[]string{"queue", "state"}, nil)
	overdueDesc = prometheus.NewDesc("freshen_models_overdue",
		"Models whose freshness episode is open, as last read from the store.", nil, nil)
	waitingDesc = prometheus.NewDesc("freshen_models_waiting_for_slot",
		"Models due and waiting for a concurrency slot, as last read from the store.", nil, nil)
	jobsDesc = prometheus.NewDesc("freshen_queue_jobs_waiting",
		"Jobs waiting for a worker on the queue's list in Redis.", []string{"queue"}, nil)
	outcomesDesc = prometheus.NewDesc("freshen_outcomes_waiting",
		"Outcomes waiting for a consumer on the outcomes list in Redis.", nil, nil)
	deadDesc = prometheus.NewDesc("freshen_dead_letters",
		"Entries of the dead-letter list in Redis.", nil, nil)
)

// stateCollector reads the state gauges at scrape time, caching a reading
// for TTL.
type stateCollector struct {
	cfg     StateConfig
	metrics *refresh.Metrics
	log     *slog.Logger

	mu       sync.Mutex
	at       time.Time // of the reading, zero before the first
	all      refresh.ModelCounts
	byQueue  map[string]refresh.ModelCounts
	modelsOK bool
	lengths  Lengths
	queueOK  bool
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{modelsDesc, queueModelsDesc, overdueDesc, waitingDesc, jobsDesc, outcomesDesc, deadDesc} {
		ch <- d
	}
}

// states names the states of refresh.ModelCounts, in the order of values.
var states = [...]string{"disabled", "paused", "running", "failing", "idle"}

func values(c refresh.ModelCounts) [len(states)]int64 {
	return [...]int64{c.Disabled, c.Paused, c.Running, c.Failing, c.Idle}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read()
	if c.modelsOK {
		for i, v := range values(c.all) {
			ch <- prometheus.MustNewConstMetric(modelsDesc, prometheus.GaugeValue, float64(v), states[i])
		}
		for q, counts := range c.byQueue {
			for i, v := range values(counts) {
				ch <- prometheus.MustNewConstMetric(queueModelsDesc, prometheus.GaugeValue, float64(v), q, states[i])
			}
		}
		ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(c.all.Overdue))
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(c.all.WaitingForSlot))
	}
	if c.queueOK {
		for q, n := range c.lengths.Jobs {
			ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), q)
		}
		ch <- prometheus.MustNewConstMetric(outcomesDesc, prometheus.GaugeValue, float64(c.lengths.Outcomes))
		ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(c.lengths.Dead))
	}
}

// read refreshes the reading if it is older than TTL; the caller holds
// c.mu. A part that cannot be read is left out of the scrape and logged.
func (c *stateCollector) read() {
	now := c.cfg.Clock.Now()
	if !c.at.IsZero() && now.Sub(c.at) < c.cfg.TTL && now.Sub(c.at) >= 0 {
		return
	}
	c.at = now
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	all, byQueue, err := c.cfg.Models.CountModels(ctx, c.cfg.MaxQueues)
	c.modelsOK = err == nil
	if err != nil {
		c.log.Warn("metrics: count models", "err", err)
	} else {
		c.all, c.byQueue = all, byQueue
		c.metrics.Overdue.Store(all.Overdue)
		c.metrics.WaitingForSlot.Store(all.WaitingForSlot)
	}
	c.queueOK = false
	if c.cfg.LengthsFunc == nil {
		return
	}
	queues := make([]string, 0, len(c.byQueue))
	for q := range c.byQueue {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	l, err := c.cfg.LengthsFunc(ctx, queues)
	if err != nil {
		c.log.Warn("metrics: read queue lengths", "err", err)
		return
	}
	c.lengths, c.queueOK = l, true
}

// metricsHandler serves the registry in the Prometheus text format.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}})
}

// slogPrinter passes promhttp's errors to the server's logger.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Error("serve metrics", "err", v) }

// init sets the collector's defaults; NewServer calls it.
func (c *stateCollector) init(m *refresh.Metrics, log *slog.Logger) {
	c.metrics, c.log = m, log
	if c.cfg.TTL <= 0 {
		c.cfg.TTL = 5 * time.Second
	}
	if c.cfg.Timeout <= 0 {
		c.cfg.Timeout = 2 * time.Second
	}
	if c.cfg.MaxQueues <= 0 {
		c.cfg.MaxQueues = 100
	}
	if c.cfg.Clock == nil {
		c.cfg.Clock = refresh.SystemClock{}
	}
}
