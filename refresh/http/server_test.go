package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// start is 05:30 UTC on a Monday: 06:30 in Paris (UTC+1 until March 29).
var start = time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC)

const parisSchedule = `DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16`

type bundle struct {
	clock     *refresh.VirtualClock
	store     *memory.Store
	queue     *memory.Queue
	svc       *refresh.Service
	metrics   *refresh.Metrics
	scheduler *refresh.Scheduler
	consumer  *refresh.Consumer
	handler   http.Handler
	logs      *bytes.Buffer
}

func setup(t *testing.T, opts ...refreshhttp.Option) *bundle {
	t.Helper()
	b := &bundle{clock: refresh.NewVirtualClock(start), store: memory.NewStore(), metrics: &refresh.Metrics{}, logs: &bytes.Buffer{}}
	b.queue = memory.NewQueue(b.clock)
	log := slog.New(slog.NewTextHandler(b.logs, nil))
	b.svc = &refresh.Service{Store: b.store, Clock: b.clock, Metrics: b.metrics, Logger: log}
	var err error
	b.scheduler, err = refresh.NewScheduler(refresh.SchedulerConfig{Store: b.store, Queue: b.queue, Clock: b.clock, Metrics: b.metrics,
		NewUIDFunc: sequence()})
	require.NoError(t, err)
	b.consumer, err = refresh.NewConsumer(refresh.ConsumerConfig{Store: b.store, Outcomes: b.queue, Clock: b.clock, Metrics: b.metrics})
	require.NoError(t, err)
	b.handler = refreshhttp.NewServer(b.svc, opts...)
	return b
}

// sequence returns uids u1, u2, ...
func sequence() func() string {
	n := 0
	return func() string {
		n++
		return "u" + strconv.Itoa(n)
	}
}

// do sends a request and returns the status and the decoded JSON body (nil
// for an empty body).
func (b *bundle) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := b.raw(t, method, path, body)
	if rec.Body.Len() == 0 {
		return rec.Code, nil
	}
	require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"), rec.Body.String())
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return rec.Code, out
}

func (b *bundle) raw(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, httptest.NewRequest(method, path, r))
	return rec
}

// put creates a model and checks it was created.
func (b *bundle) put(t *testing.T, id, body string) map[string]any {
	t.Helper()
	code, m := b.do(t, "PUT", "/models/"+id, body)
	require.Equal(t, http.StatusCreated, code, m)
	return m
}

// tick runs one scheduler pass and returns the jobs it pushed to queue q.
func (b *bundle) tick(t *testing.T, q string) []refresh.Job {
	t.Helper()
	_, err := b.scheduler.RunOnce(context.Background())
	require.NoError(t, err)
	return b.queue.Take(q, 100)
}

// deliver applies outcomes through the consumer.
func (b *bundle) deliver(t *testing.T, outs ...refresh.Outcome) {
	t.Helper()
	for _, o := range outs {
		b.queue.Deliver(o)
	}
	_, err := b.consumer.RunOnce(context.Background())
	require.NoError(t, err)
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.do(t, "GET", "/healthz", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", body["status"])

	healthy := true
	b = setup(t, refreshhttp.WithHealthCheck("postgres", func(context.Context) error {
		if !healthy {
			return errors.New("connection refused")
		}
		return nil
	}))
	code, _ = b.do(t, "GET", "/healthz", "")
	require.Equal(t, http.StatusOK, code)
	healthy = false
	code, body = b.do(t, "GET", "/healthz", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, map[string]any{"postgres": "connection refused"}, body["failed"])
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "freshen_queue_test_total", Help: "test"})
	extra.Add(3)
	b := setup(t, refreshhttp.WithCollectors(extra)) // Service.Metrics is the default
	b.put(t, "m1", `{"trigger": true}`)
	require.Len(t, b.tick(t, "default"), 1)
	b.do(t, "GET", "/nowhere", "")

	rec := b.raw(t, "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, rec.Code)
	text := rec.Body.String()
	require.Contains(t, text, "freshen_attempts_started_total 1\n")
	require.Contains(t, text, "freshen_scheduler_ticks_total 1\n")
	require.Contains(t, text, "freshen_models_disabled_total 0\n")
	require.Contains(t, text, "freshen_queue_test_total 3\n")
	require.Contains(t, text, `freshen_http_requests_total{code="201",route="PUT /models/{id}"} 1`)
	require.Contains(t, text, `freshen_http_requests_total{code="404",route="unmatched"} 1`)
	require.Contains(t, text, "go_goroutines")
}

func TestUnmatchedRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.do(t, "GET", "/nowhere", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "no route for GET /nowhere", body["error"])

	rec := b.raw(t, "PATCH", "/models/m1", "{}")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Contains(t, rec.Header().Get("Allow"), "PUT")
	require.Contains(t, rec.Body.String(), `"error": "method PATCH not allowed on /models/m1"`)

	code, _ = b.do(t, "POST", "/models/m1/explode", "")
	require.Equal(t, http.StatusNotFound, code)
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		err     error
		code    int
		message string
		logged  bool
	}{
		{"not found", refresh.Errorf(refresh.ENOTFOUND, "model %q not found", "x"), 404, `model "x" not found`, false},
		{"invalid", refresh.Errorf(refresh.EINVALID, "bad"), 400, "bad", false},
		{"conflict", fmt.Errorf("put: %w", refresh.Errorf(refresh.ECONFLICT, "busy")), 409, "busy", false},
		{"validation", &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "a", Rule: "b"}}}, 400, "a: b", false},
		{"internal code", refresh.Errorf(refresh.EINTERNAL, "secret detail"), 500, "internal error", true},
		{"plain", errors.New("dial tcp: connection refused"), 500, "internal error", true},
		{"too large", &http.MaxBytesError{Limit: 1 << 20}, 413, "request body is larger than 1 MiB", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			srv := b.handler.(*refreshhttp.Server)
			rec := httptest.NewRecorder()
			srv.Error(rec, httptest.NewRequest("GET", "/models/x", nil), tt.err)
			require.Equal(t, tt.code, rec.Code)
			var body map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			require.Equal(t, tt.message, body["error"])
			if tt.logged {
				require.Contains(t, b.logs.String(), tt.err.Error())
			} else {
				require.Empty(t, b.logs.String())
			}
		})
	}
}
