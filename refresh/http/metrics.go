package http

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freshen-dev/freshen/refresh"
)

// newRegistry returns a registry of the Go runtime and process collectors,
// counters over m, and extra.
func newRegistry(m *refresh.Metrics, extra []prometheus.Collector) *prometheus.Registry {
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
	)
	reg.MustRegister(extra...)
	return reg
}

// metricsHandler serves the registry in the Prometheus text format.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}})
}

// slogPrinter passes promhttp's errors to the server's logger.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Error("serve metrics", "err", v) }
