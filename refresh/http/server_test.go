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
	"testing/iotest"
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
	server    *httptest.Server // started by client
	authLogs  *bytes.Buffer    // see setupAuth
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

	rec := b.raw(t, "POST", "/models/m1", "{}")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Contains(t, rec.Header().Get("Allow"), "PUT")
	require.Contains(t, rec.Header().Get("Allow"), "PATCH")
	require.Equal(t, `{"error":"method POST not allowed on /models/m1"}`+"\n", rec.Body.String())

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
		{"too large", &http.MaxBytesError{Limit: 1 << 20}, 413, "body: must be at most 1 MiB", false},
		{"precondition", refresh.Errorf(refresh.EPRECONDITION, "changed"), 412, "changed", false},
		{"unavailable", fmt.Errorf("get: %w", refresh.Errorf(refresh.EUNAVAILABLE, "locked too long")), 503, "locked too long", false},
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
			if tt.code == http.StatusServiceUnavailable {
				require.Equal(t, "1", rec.Header().Get("Retry-After"))
			}
			if tt.logged {
				require.Contains(t, b.logs.String(), tt.err.Error())
			} else {
				require.Empty(t, b.logs.String())
			}
		})
	}
}

// send serves req and returns the recorded response.
func (b *bundle) send(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	return rec
}

// errorOf decodes the JSON error of rec and returns its message and the
// fields it names.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) (string, []string) {
	t.Helper()
	var body struct {
		Error  string               `json:"error"`
		Fields []refresh.FieldError `json:"fields"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
	var fields []string
	for _, f := range body.Fields {
		fields = append(fields, f.Field)
	}
	return body.Error, fields
}

func TestBadBytesAreRefusedByName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{}`)
	tests := []struct {
		method, target, body string
		field                string
	}{
		{"GET", "/models/a%00b", "", "id"},
		{"GET", "/models/%FF", "", "id"},
		{"GET", "/models/a%2Fb", "", "id"},
		{"GET", "/models/" + strings.Repeat("a", 201), "", "id"},
		{"DELETE", "/models/a%00", "", "id"},
		{"POST", "/models/a%00/trigger", "", "id"},
		{"POST", "/models/%C3%28/pause", "", "id"},
		{"GET", "/models/a%00/attempts", "", "id"},
		{"PUT", "/models/a%00", `{}`, "id"},
		{"PATCH", "/models/a%00", `{}`, "id"},
		{"GET", "/models?after=a%00", "", "after"},
		{"GET", "/models?after=%FF", "", "after"},
		{"GET", "/models?queue=q%00", "", "queue"},
		{"GET", "/models?queue=%FE", "", "queue"},
		{"GET", "/models?queue=a:b", "", "queue"},
		{"PUT", "/models/m2", `{"queue": "a\u0000"}`, "queue"},
		{"PUT", "/models/m2", `{"queue": "a:b"}`, "queue"},
		{"PUT", "/models/m2", "{\"payload\": \"\xff\"}", "body"},
		{"PUT", "/models/m2", `{"policy": {"disabled_message": "a\u0000b"}}`, "policy.disabled_message"},
	}
	for _, tt := range tests {
		rec := b.raw(t, tt.method, tt.target, tt.body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s: %s", tt.method, tt.target, rec.Body.String())
		_, fields := errorOf(t, rec)
		require.Equal(t, []string{tt.field}, fields, "%s %s", tt.method, tt.target)
	}
	// A model id may hold ':', a queue name may not.
	code, m := b.do(t, "PUT", "/models/tenant:m1", `{"queue": "q.1@x-y_z"}`)
	require.Equal(t, http.StatusCreated, code, m)
	code, body := b.do(t, "GET", "/models?after=tenant:m0&queue=q.1@x-y_z", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, body["models"], 1)
	require.NotContains(t, b.logs.String(), "request failed")
}

func TestQueryThatDoesNotParseIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"queue": "q1"}`)
	b.put(t, "m2", `{"queue": "q2"}`)
	junk := strings.Repeat("x=1&", 10_000)
	tests := []struct {
		target, error string
	}{
		{"/models?queue=q1&" + junk, "query: must have at most 32 parameters, got 10002"},
		{"/models?" + strings.Repeat("a&", 32) + "queue=q1", "query: must have at most 32 parameters, got 33"},
		{"/models?queue=q1;limit=1", "query: invalid semicolon separator in query"},
		{"/models?queue=%zz", `query: invalid URL escape "%zz"`},
		{"/models/m1?x=1", "x: unknown parameter; this route takes no parameters"},
		{"/models/m1/attempts?limit=1&limit=2", "limit: must be given once"},
		{"/models/m1/attempts?limit=1&n=2", "n: unknown parameter; want one of limit, before"},
	}
	for _, tt := range tests {
		rec := b.raw(t, "GET", tt.target, "")
		require.Equal(t, http.StatusBadRequest, rec.Code, tt.error)
		msg, _ := errorOf(t, rec)
		require.Equal(t, tt.error, msg)
	}
	// Every route refuses parameters it does not take.
	for _, route := range []struct{ method, target string }{
		{"PUT", "/models/m1?trigger=true"}, {"PATCH", "/models/m1?trigger=true"}, {"DELETE", "/models/m1?force=1"},
		{"POST", "/models/m1/trigger?reason=x"}, {"POST", "/models/m1/pause?x"},
	} {
		rec := b.raw(t, route.method, route.target, `{}`)
		require.Equal(t, http.StatusBadRequest, rec.Code, route.target)
	}
	code, m := b.do(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, false, m["paused"], "nothing was applied")
}

// nested returns a JSON value of depth arrays, one inside the other.
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func TestResponsesAreProportionalToWhatIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Payloads written before the bounds existed: 9,000 arrays deep.
	deep := nested(9000)
	var ids []string
	err := b.store.Modify(context.Background(), nil, func([]refresh.Model) (refresh.Batch, error) {
		var batch refresh.Batch
		for i := range 10 {
			id := fmt.Sprintf("deep%d", i)
			ids = append(ids, id)
			m, _ := refresh.Create(refresh.Model{ID: id, Queue: "q", Payload: json.RawMessage(deep), Policy: refresh.DefaultPolicy()}, false, start)
			batch.Changes = append(batch.Changes, refresh.Change{Model: m})
		}
		return batch, nil
	})
	require.NoError(t, err)
	const overhead = 2 << 10 // the members of one model besides its payload
	rec := b.raw(t, "GET", "/models/deep0", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Less(t, rec.Body.Len(), len(deep)+overhead)
	rec = b.raw(t, "GET", "/models", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Less(t, rec.Body.Len(), len(ids)*(len(deep)+overhead))

	// A payload is written as stored, whitespace aside, HTML characters
	// included.
	b.put(t, "html", `{"payload": {"a": "<b>&</b>",   "n": [1, 2]}}`)
	rec = b.raw(t, "GET", "/models/html", "")
	require.Contains(t, rec.Body.String(), `"payload":{"a":"<b>&</b>","n":[1,2]}`)
}

func TestTimesAreWholeSecondsInUTC(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Set(start.Add(123456789 * time.Nanosecond))
	m := b.put(t, "m1", `{"trigger": true}`)
	require.Equal(t, "2026-03-02T05:30:00Z", m["refresh_at"])
	require.Equal(t, "2026-03-02T05:30:00Z", m["created_at"])
	require.Equal(t, []any{"2026-03-02T05:30:00Z"}, m["next_runs"])
	jobs := b.tick(t, "default")
	b.clock.Advance(1500 * time.Millisecond)
	b.deliver(t, refresh.Outcome{ModelID: "m1", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure, Kind: "x", Message: "boom"})
	require.Len(t, b.tick(t, "default"), 1, "the retry (delay 0s) starts")
	code, body := b.do(t, "GET", "/models/m1/attempts", "")
	require.Equal(t, http.StatusOK, code)
	a := body["attempts"].([]any)[1].(map[string]any)
	require.Equal(t, "2026-03-02T05:30:00Z", a["started_at"])
	require.Equal(t, "2026-03-02T06:30:00Z", a["deadline_at"])
	require.Equal(t, "2026-03-02T05:30:01Z", a["finished_at"])
	code, m = b.do(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "2026-03-02T05:30:01Z", m["failing_since"])
	require.Equal(t, "2026-03-02T05:30:01Z", m["last_error"].(map[string]any)["at"])
	require.Equal(t, "2026-03-02T05:30:01Z", m["started_at"])
}

// blockingStore is a store whose reads and writes wait for the end of
// their context.
type blockingStore struct {
	refresh.Store
	calls chan string
}

func (s blockingStore) wait(ctx context.Context, call string) error {
	s.calls <- call
	<-ctx.Done()
	return ctx.Err()
}

func (s blockingStore) Get(ctx context.Context, id string) (refresh.Model, error) {
	return refresh.Model{}, s.wait(ctx, "get")
}

func (s blockingStore) List(ctx context.Context, f refresh.Filter) ([]refresh.Model, error) {
	return nil, s.wait(ctx, "list")
}

func (s blockingStore) Modify(ctx context.Context, ids []string, fn func([]refresh.Model) (refresh.Batch, error)) error {
	return s.wait(ctx, "modify")
}

func TestNoRequestOutlivesItsTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	calls := make(chan string, 10)
	b.svc.Store = blockingStore{Store: b.store, calls: calls}
	b.handler = refreshhttp.NewServer(b.svc, refreshhttp.WithRequestTimeout(20*time.Millisecond))
	for _, r := range []struct{ method, target, body string }{
		{"GET", "/models", ""}, {"GET", "/models/m1", ""}, {"GET", "/models/m1/attempts", ""},
		{"PUT", "/models/m1", "{}"}, {"PATCH", "/models/m1", "{}"}, {"POST", "/models/m1/trigger", ""}, {"DELETE", "/models/m1", ""},
	} {
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- b.raw(t, r.method, r.target, r.body) }()
		select {
		case rec := <-done:
			require.Equal(t, http.StatusServiceUnavailable, rec.Code, r.target)
			require.Equal(t, "1", rec.Header().Get("Retry-After"))
			msg, _ := errorOf(t, rec)
			require.Equal(t, "request took longer than 20ms; try again", msg)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s still waits on the store", r.method, r.target)
		}
		require.NotEmpty(t, <-calls, "the store was called")
	}
}

func TestClientThatLeavesIsNotAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The client cuts the body short.
	req := httptest.NewRequest("PUT", "/models/m1", io.MultiReader(strings.NewReader(`{"policy": {"sched`), iotest.ErrReader(io.ErrUnexpectedEOF)))
	rec := b.send(req)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	msg, fields := errorOf(t, rec)
	require.Equal(t, "body: could not be read to its end", msg)
	require.Equal(t, []string{"body"}, fields)

	// The client is gone before the body is read: nothing is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req = httptest.NewRequestWithContext(ctx, "PUT", "/models/m1", strings.NewReader(`{"queue": "q", "trigger": true}`))
	rec = b.send(req)
	require.Equal(t, 499, rec.Code)
	_, err := b.store.Get(context.Background(), "m1")
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "nothing written")
	require.NotContains(t, b.logs.String(), "level=ERROR")
	require.NotContains(t, b.logs.String(), "level=WARN")
}

// A start a limit holds back shows on /metrics by limit.
func TestMetricsLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.PutLimit(context.Background(), refresh.Limit{Kind: refresh.LimitQueue, Key: "default", MaxStarts: 1, Per: refresh.Duration(time.Minute)}, false)
	require.NoError(t, err)
	b.put(t, "m1", `{"trigger": true}`)
	b.put(t, "m2", `{"trigger": true}`)
	require.Len(t, b.tick(t, "default"), 1, "the limit admits one start a minute")
	b.clock.Advance(10 * time.Second)
	require.Empty(t, b.tick(t, "default"))

	text := b.raw(t, "GET", "/metrics", "").Body.String()
	require.Contains(t, text, `freshen_limit_held_total{limit="queue:default"} 1`+"\n")
	require.Contains(t, text, `freshen_limit_wait_seconds{limit="queue:default"} 10`+"\n")
}
