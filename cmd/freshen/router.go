package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh/postgres"
)

// readyCheckTimeout bounds each dependency check of /readyz.
const readyCheckTimeout = 2 * time.Second

// router is serve's HTTP handler. It answers /healthz and /readyz itself,
// from the moment the port opens, and passes every other request to the API
// once open has installed it (503 with Retry-After before).
//
//   - GET /healthz is liveness: 200 {"status": "ok"} while the process
//     serves HTTP, whatever its dependencies do.
//   - GET /readyz is readiness: 200 {"status": "ready"} once the API is open
//     and PostgreSQL and Redis both answer; else 503 {"status":
//     "unavailable", "failed": {"postgres": "...", "redis": "..."}} naming
//     each dependency that does not (or "starting" while the loops start).
type router struct {
	mux   *http.ServeMux
	api   atomic.Pointer[http.Handler]
	redis redis.UniversalClient
	// redisTarget names where Redis is expected, for /readyz's errors: a
	// timeout's error says nothing of where.
	redisTarget string
	store       *atomic.Pointer[postgres.Store]
	redact      redactor
}

func newRouter(client redis.UniversalClient, redisTarget string, store *atomic.Pointer[postgres.Store], r redactor) *router {
	rt := &router{mux: http.NewServeMux(), redis: client, redisTarget: redisTarget, store: store, redact: r}
	rt.mux.HandleFunc("GET /healthz", rt.handleHealth)
	rt.mux.HandleFunc("GET /readyz", rt.handleReady)
	rt.mux.HandleFunc("/", rt.handleAPI)
	return rt
}

// open installs the API: from now on it answers every route but /healthz
// and /readyz.
func (rt *router) open(api http.Handler) { rt.api.Store(&api) }

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.mux.ServeHTTP(w, r) }

func (rt *router) handleAPI(w http.ResponseWriter, r *http.Request) {
	if api := rt.api.Load(); api != nil {
		(*api).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "1")
	writeJSONBody(w, http.StatusServiceUnavailable, map[string]string{"error": "starting: waiting for PostgreSQL and Redis (see /readyz)"})
}

func (rt *router) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSONBody(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (rt *router) handleReady(w http.ResponseWriter, r *http.Request) {
	failed := rt.check(r.Context())
	if len(failed) > 0 {
		w.Header().Set("Retry-After", "1")
		writeJSONBody(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failed": failed})
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]string{"status": "ready"})
}

// check pings both dependencies at once and returns the error of each one
// that does not answer, by name.
func (rt *router) check(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
	defer cancel()
	pg := make(chan error, 1)
	go func() {
		s := rt.store.Load()
		if s == nil {
			pg <- errNotConnected
			return
		}
		pg <- s.Ping(ctx)
	}()
	failed := map[string]string{}
	if err := rt.redis.Ping(ctx).Err(); err != nil {
		failed["redis"] = rt.redact.String(rt.redisTarget + ": " + err.Error())
	}
	if err := <-pg; err != nil {
		failed["postgres"] = rt.redact.String(err.Error())
	}
	if len(failed) == 0 && rt.api.Load() == nil {
		failed["serve"] = "starting"
	}
	return failed
}

var errNotConnected = errors.New("not connected yet")

// writeJSONBody writes v as the JSON body of a response with status code.
func writeJSONBody(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to tell it
}
