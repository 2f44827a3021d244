package http

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freshen-dev/freshen/refresh"
)

// Server is the HTTP handler of the API. Build it with NewServer.
type Server struct {
	svc      *refresh.Service
	log      *slog.Logger
	metrics  *refresh.Metrics
	registry *prometheus.Registry
	extra    []prometheus.Collector
	state    *stateCollector
	checks   []check
	requests *prometheus.CounterVec
	mux      *http.ServeMux
	timeout  time.Duration
	auth     *Auth
	dead     DeadLetters
	large    budget
	refused  prometheus.Counter
	// routes are the patterns registered, in order.
	routes []string
}

// openAPI is the OpenAPI 3.1 document of the API, served at GET
// /openapi.json; openapi_test.go checks it against the routes and the
// answers of the handlers.
//
//go:embed openapi.json
var openAPI []byte

// DefaultRequestTimeout bounds the work of one request (see
// WithRequestTimeout).
const DefaultRequestTimeout = 30 * time.Second

// errRequestTimeout is the cause of a request context that ran out of
// time.
var errRequestTimeout = errors.New("request timed out")

type check struct {
	name string
	fn   func(context.Context) error
}

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger of failed requests (default: svc.Logger, or
// nothing).
func WithLogger(log *slog.Logger) Option { return func(s *Server) { s.log = log } }

// WithMetrics sets the counters /metrics exports (default: svc.Metrics).
// Pass the one Metrics the scheduler, the consumer and the service share.
func WithMetrics(m *refresh.Metrics) Option { return func(s *Server) { s.metrics = m } }

// WithCollectors adds Prometheus collectors to /metrics, e.g. the queue's.
func WithCollectors(cs ...prometheus.Collector) Option {
	return func(s *Server) { s.extra = append(s.extra, cs...) }
}

// WithHealthCheck adds a check to /healthz: while fn returns an error,
// /healthz answers 503 and names the failing check.
func WithHealthCheck(name string, fn func(context.Context) error) Option {
	return func(s *Server) { s.checks = append(s.checks, check{name: name, fn: fn}) }
}

// WithRequestTimeout bounds the time a request may take once its headers
// are read (default DefaultRequestTimeout): its context, which every store
// call runs under, ends then, and it is answered 503 with a Retry-After
// header. The body's read is bounded by the http.Server's ReadTimeout.
func WithRequestTimeout(d time.Duration) Option { return func(s *Server) { s.timeout = d } }

// WithResponseBytes bounds the memory of large answers to n bytes
// (default DefaultResponseBytes): the bodies over 64 KiB being written,
// each held until its client has read it, and the pages of models being
// read, which reserve 8 MiB each. A large answer that would go past the
// bound, with others in flight, is answered 503 with a Retry-After header
// instead; one alone is written whatever its size.
func WithResponseBytes(n int64) Option { return func(s *Server) { s.large.max = n } }

// WithAuth makes every route but /healthz need a bearer token that a
// knows, with the scope the route needs (see the package documentation);
// without it, the API is open to every caller.
func WithAuth(a *Auth) Option { return func(s *Server) { s.auth = a } }

// WithDeadLetters serves the dead-letter list d under /dead; without it,
// those routes do not exist.
func WithDeadLetters(d DeadLetters) Option { return func(s *Server) { s.dead = d } }

// NewServer returns the API handler over svc. It panics if two collectors
// passed with WithCollectors clash, which is a programming error.
func NewServer(svc *refresh.Service, opts ...Option) *Server {
	s := &Server{svc: svc, log: svc.Logger, metrics: svc.Metrics, timeout: DefaultRequestTimeout}
	s.large.max = DefaultResponseBytes
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = &refresh.Metrics{}
	}
	if s.state != nil {
		s.state.init(s.metrics, s.log)
	}
	s.registry = newRegistry(s.metrics, s.state, s.extra)
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "freshen", Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests served, by route and status code.",
	}, []string{"route", "code"})
	s.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "freshen", Subsystem: "http", Name: "large_responses_refused_total",
		Help: "Large answers refused with 503 because the large answers in flight held their bound in bytes (--http-response-mib).",
	})
	s.registry.MustRegister(s.requests, s.refused)

	s.mux = http.NewServeMux()
	s.handle("GET /healthz", s.handleHealth)
	s.route("GET /openapi.json", ScopeRead, anyID, s.handleOpenAPI)
	s.route("GET /metrics", ScopeRead, wholeOnly, s.metricsHandler().ServeHTTP)
	s.route("GET /models", ScopeRead, anyID, s.handleList)
	s.route("PUT /models/{id}", ScopeWrite, ownID, s.handlePut)
	s.route("PATCH /models/{id}", ScopeWrite, ownID, s.handlePatch)
	s.route("GET /models/{id}", ScopeRead, ownID, s.handleGet)
	s.route("DELETE /models/{id}", ScopeAdmin, ownID, s.handleDelete)
	s.route("GET /models/{id}/attempts", ScopeRead, ownID, s.handleAttempts)
	s.route("GET /models/{id}/audit", ScopeRead, ownID, s.handleAudit)
	for _, action := range []string{refresh.ActionTrigger, refresh.ActionEnable, refresh.ActionPause, refresh.ActionResume, refresh.ActionCancel} {
		s.route("POST /models/{id}/"+action, ScopeWrite, ownID, func(w http.ResponseWriter, r *http.Request) {
			s.handleAct(w, r, action)
		})
	}
	for _, action := range []string{refresh.ActionTrigger, refresh.ActionEnable, refresh.ActionPause, refresh.ActionResume, refresh.ActionCancel} {
		s.route("POST /bulk/"+action, ScopeWrite, anyID, func(w http.ResponseWriter, r *http.Request) {
			s.handleBulk(w, r, action)
		})
	}
	s.route("GET /limits", ScopeRead, wholeOnly, s.handleLimits)
	s.route("PUT /limits/{kind}/{key}", ScopeAdmin, wholeOnly, s.handlePutLimit)
	s.route("DELETE /limits/{kind}/{key}", ScopeAdmin, wholeOnly, s.handleDeleteLimit)
	if s.dead != nil {
		s.route("GET /dead", ScopeAdmin, wholeOnly, s.handleDeadList)
		s.route("POST /dead/requeue", ScopeAdmin, wholeOnly, s.handleRequeue)
		s.route("POST /dead/drop", ScopeAdmin, wholeOnly, s.handleDrop)
		s.route("DELETE /dead/{id}", ScopeAdmin, wholeOnly, s.handleDropOne)
	}
	return s
}

// ServeHTTP routes r. A request no route matches gets a JSON 404, or a JSON
// 405 with an Allow header when the path exists under another method.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeoutCause(r.Context(), s.timeout, errRequestTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	h, pattern := s.mux.Handler(r)
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK, server: s}
	defer sw.give()
	switch {
	case pattern != "":
		s.mux.ServeHTTP(sw, r)
	case s.auth != nil && !s.authenticated(sw, r):
		pattern = "unmatched" // an unknown caller learns nothing of the routes
	default:
		// Ask the mux what it would answer (404 or 405, with Allow), and
		// answer the same in JSON.
		rec := &recorder{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			sw.Header().Set("Allow", allow)
		}
		msg := "no route for " + r.Method + " " + r.URL.Path
		if rec.code == http.StatusMethodNotAllowed {
			msg = "method " + r.Method + " not allowed on " + r.URL.Path
		}
		writeJSON(sw, rec.code, errorBody{Error: msg})
		pattern = "unmatched"
	}
	s.requests.WithLabelValues(pattern, strconv.Itoa(sw.code)).Inc()
}

// What a route asks of a token's id prefix.
const (
	anyID     = iota // nothing: the handler filters by Principal.Owns
	ownID            // the model of the path is within the prefix
	wholeOnly        // the token has no prefix: the route shows more than models
)

// handle registers h on pattern, open to every caller.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.routes = append(s.routes, pattern)
	s.mux.HandleFunc(pattern, h)
}

// route registers h on pattern. With an Auth, a caller needs scope, and
// the id prefix of its token must allow what ids says.
func (s *Server) route(pattern string, scope Scope, ids int, h http.HandlerFunc) {
	if s.auth == nil {
		s.handle(pattern, h)
		return
	}
	s.routes = append(s.routes, pattern)
	s.mux.Handle(pattern, s.auth.Require(scope, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		switch {
		case p.Prefix == "" || ids == anyID:
		case ids == ownID && !p.Owns(r.PathValue("id")):
			s.auth.forbid(w, r, p, fmt.Sprintf("token %q is limited to the models whose id starts with %q", p.Name, p.Prefix), "")
			return
		case ids == wholeOnly:
			s.auth.forbid(w, r, p, fmt.Sprintf("token %q is limited to the models whose id starts with %q; %s %s needs a token without a prefix", p.Name, p.Prefix, r.Method, r.URL.Path), "")
			return
		}
		h(w, r)
	})))
}

// authenticated reports whether r carries a known token, and answers 401
// when it does not.
func (s *Server) authenticated(w http.ResponseWriter, r *http.Request) bool {
	_, ok := s.auth.check(w, r)
	return ok
}

// recorder keeps the header and status code of a response and drops its
// body.
type recorder struct {
	header http.Header
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }

// statusWriter remembers the status code written, and keeps the bytes of
// its server's budget the request holds (see reserve and writeJSON).
type statusWriter struct {
	http.ResponseWriter
	code   int
	server *Server
	held   int64
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// take replaces what the request holds of the budget with n bytes, and
// reports whether there was room for them; when there was not, it holds
// nothing and counts the refusal.
func (w *statusWriter) take(n int64) bool {
	w.give()
	if !w.server.large.take(n) {
		w.server.refused.Inc()
		return false
	}
	w.held = n
	return true
}

// give returns what the request holds of the budget.
func (w *statusWriter) give() {
	w.server.large.give(w.held)
	w.held = 0
}

// refuse answers 503 with Retry-After: the budget has no room.
func (w *statusWriter) refuse() {
	w.Header().Set("Retry-After", retryAfter)
	writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: fmt.Sprintf(
		"the server holds %s of large answers at once, its most; try again", byteCount(w.server.large.max))})
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errorBody is the JSON of every error response.
type errorBody struct {
	Error  string               `json:"error"`
	Fields []refresh.FieldError `json:"fields,omitempty"`
}

// Error writes err as a JSON error response. It is the one place where
// error codes become status codes: EINVALID 400, ENOTFOUND 404, ECONFLICT
// 409, EPRECONDITION 412, EUNAVAILABLE 503 with Retry-After, a body over
// the size limit 413, a body cut short 400, a request out of time 503 with
// Retry-After, a request whose client left 499 (nobody reads it; only the
// metrics and the debug log see it), anything else 500 with the error
// logged and a generic message sent.
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	if tooLarge, ok := errors.AsType[*http.MaxBytesError](err); ok {
		rule := "must be at most " + byteCount(tooLarge.Limit)
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "body: " + rule, Fields: []refresh.FieldError{{Field: "body", Rule: rule}}})
		return
	}
	if _, ok := errors.AsType[*bodyError](err); ok {
		s.log.Debug("request body cut short", "method", r.Method, "path", r.URL.Path, "err", err)
		rule := "could not be read to its end"
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "body: " + rule, Fields: []refresh.FieldError{{Field: "body", Rule: rule}}})
		return
	}
	if ended(r.Context(), err) {
		if context.Cause(r.Context()) == errRequestTimeout {
			s.log.Warn("request timed out", "method", r.Method, "path", r.URL.Path, "timeout", s.timeout.String(), "err", err)
			w.Header().Set("Retry-After", retryAfter)
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "request took longer than " + s.timeout.String() + "; try again"})
			return
		}
		s.log.Debug("client closed request", "method", r.Method, "path", r.URL.Path, "err", err)
		writeJSON(w, statusClientClosed, errorBody{Error: "client closed request"})
		return
	}
	body := errorBody{Error: refresh.ErrorMessage(err)}
	if v, ok := errors.AsType[*refresh.ValidationError](err); ok {
		body.Fields = v.Fields
	}
	code := http.StatusInternalServerError
	switch refresh.ErrorCode(err) {
	case refresh.EINVALID:
		code = http.StatusBadRequest
	case refresh.ENOTFOUND:
		code = http.StatusNotFound
	case refresh.ECONFLICT:
		code = http.StatusConflict
	case refresh.EPRECONDITION:
		code = http.StatusPreconditionFailed
	case refresh.EUNAVAILABLE:
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", retryAfter)
	default:
		attrs := []any{"method", r.Method, "path", r.URL.Path, "err", err}
		if p, ok := PrincipalFrom(r.Context()); ok {
			attrs = append(attrs, "token", p.Name)
		}
		s.log.Error("request failed", attrs...)
		body = errorBody{Error: "internal error"}
	}
	writeJSON(w, code, body)
}

// retryAfter is the Retry-After of a 503: a second.
const retryAfter = "1"

// statusClientClosed is the status recorded for a request whose client
// left before the answer (nginx's 499).
const statusClientClosed = 499

// ended reports whether err comes from the end of ctx, a request's
// context: its client left, or it ran out of time.
func ended(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// writeJSON writes v as the compact JSON body of a response with status
// code. Nothing is indented and embedded JSON (payloads) is written as
// stored, without whitespace, so a response is never larger than what it
// shows by more than its fixed members; HTML characters are not escaped.
//
// The body is encoded whole before anything is sent. Written through
// ServeHTTP, a body over 64 KiB holds its size of the server's budget,
// in place of what the request reserved, until its client has read it;
// when the budget has no room, the answer is a 503 with Retry-After
// instead.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a value the package built wrongly fails to encode.
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"internal error"}` + "\n")
	}
	if sw, ok := w.(*statusWriter); ok {
		n := int64(buf.Len())
		if n <= smallResponse {
			n = 0
		}
		if !sw.take(n) {
			sw.refuse()
			return
		}
		defer sw.give()
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes()) // the client went away; nothing to tell it
}

// handleHealth answers 200 {"status": "ok"} when every check passes, else
// 503 with the failing checks' errors.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	failed := map[string]string{}
	for _, c := range s.checks {
		if err := c.fn(ctx); err != nil {
			failed[c.name] = err.Error()
		}
	}
	if len(failed) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failed": failed})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleOpenAPI serves the OpenAPI document of the API.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.Error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPI) // the client went away; nothing to tell it
}

// byteCount writes n bytes for a person: "1 MiB", "512 KiB", "100 bytes".
func byteCount(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
