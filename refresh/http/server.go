// Package http serves Freshen's JSON API over net/http: models are created
// and replaced with PUT, read and listed with GET, acted on with POST,
// deleted with DELETE; /healthz and /metrics serve operators.
//
// Every error is a JSON object {"error": "...", "fields": [...]}; the
// refresh error codes map to status codes in one place, Error.
package http

import (
	"context"
	"encoding/json"
	"errors"
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
	checks   []check
	requests *prometheus.CounterVec
	mux      *http.ServeMux
}

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

// NewServer returns the API handler over svc. It panics if two collectors
// passed with WithCollectors clash, which is a programming error.
func NewServer(svc *refresh.Service, opts ...Option) *Server {
	s := &Server{svc: svc, log: svc.Logger, metrics: svc.Metrics}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = &refresh.Metrics{}
	}
	s.registry = newRegistry(s.metrics, s.extra)
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "freshen", Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests served, by route and status code.",
	}, []string{"route", "code"})
	s.registry.MustRegister(s.requests)

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.Handle("GET /metrics", s.metricsHandler())
	s.mux.HandleFunc("GET /models", s.handleList)
	s.mux.HandleFunc("PUT /models/{id}", s.handlePut)
	s.mux.HandleFunc("GET /models/{id}", s.handleGet)
	s.mux.HandleFunc("DELETE /models/{id}", s.handleDelete)
	s.mux.HandleFunc("GET /models/{id}/attempts", s.handleAttempts)
	for _, action := range []string{refresh.ActionTrigger, refresh.ActionEnable, refresh.ActionPause, refresh.ActionResume, refresh.ActionCancel} {
		s.mux.HandleFunc("POST /models/{id}/"+action, func(w http.ResponseWriter, r *http.Request) {
			s.handleAct(w, r, action)
		})
	}
	return s
}

// ServeHTTP routes r. A request no route matches gets a JSON 404, or a JSON
// 405 with an Allow header when the path exists under another method.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	if pattern != "" {
		s.mux.ServeHTTP(sw, r)
	} else {
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

// recorder keeps the header and status code of a response and drops its
// body.
type recorder struct {
	header http.Header
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errorBody is the JSON of every error response.
type errorBody struct {
	Error  string               `json:"error"`
	Fields []refresh.FieldError `json:"fields,omitempty"`
}

// Error writes err as a JSON error response. It is the one place where
// error codes become status codes: ENOTFOUND 404, EINVALID 400, ECONFLICT
// 409, a body over the size limit 413, anything else 500 with the error
// logged and a generic message sent.
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "request body is larger than " + byteCount(tooLarge.Limit)})
		return
	}
	body := errorBody{Error: refresh.ErrorMessage(err)}
	var v *refresh.ValidationError
	if errors.As(err, &v) {
		body.Fields = v.Fields
	}
	code := http.StatusInternalServerError
	switch refresh.ErrorCode(err) {
	case refresh.ENOTFOUND:
		code = http.StatusNotFound
	case refresh.EINVALID:
		code = http.StatusBadRequest
	case refresh.ECONFLICT:
		code = http.StatusConflict
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		body = errorBody{Error: "internal error"}
	}
	writeJSON(w, code, body)
}

// writeJSON writes v as the JSON body of a response with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to tell it
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
