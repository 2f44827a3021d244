package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
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
//     "unavailable"}. What is wrong ("redis: 10.0.0.5:6379: dial tcp ...:
//     connection refused", "serve: starting") names internal addresses, so
//     it goes to the log and, as "detail", only to a caller with an admin
//     token without a prefix (to every caller on a server without tokens,
//     where every caller is admin).
type router struct {
	mux   *http.ServeMux
	api   atomic.Pointer[http.Handler]
	redis redis.UniversalClient
	// redisTarget names where Redis is expected, for /readyz's errors: a
	// timeout's error says nothing of where.
	redisTarget string
	store       *atomic.Pointer[postgres.Store]
	redact      redactor
	// auth decides who sees /readyz's detail (nil: every caller).
	auth *refreshhttp.Auth
	log  *slog.Logger
	// details are the checks of /readyz beyond PostgreSQL and Redis (see
	// addDetail).
	details []func(context.Context) []string

	mu         sync.Mutex
	lastLogged string // the detail last logged, so that a probe logs each change once
}

func newRouter(client redis.UniversalClient, redisTarget string, store *atomic.Pointer[postgres.Store], r redactor,
	auth *refreshhttp.Auth, log *slog.Logger) *router {
	rt := &router{mux: http.NewServeMux(), redis: client, redisTarget: redisTarget, store: store, redact: r, auth: auth, log: log}
	rt.mux.HandleFunc("GET /healthz", rt.handleHealth)
	rt.mux.HandleFunc("GET /readyz", rt.handleReady)
	rt.mux.HandleFunc("/", rt.handleAPI)
	return rt
}

// addDetail adds a check to /readyz: fn returns what it finds wrong, one
// line each ("notifications: ..."), shown to admins in the detail and
// logged, without making serve unready. Call it before the router serves.
func (rt *router) addDetail(fn func(context.Context) []string) { rt.details = append(rt.details, fn) }

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

// readiness is the body of /readyz.
type readiness struct {
	Status string `json:"status"`
	// Detail is what is wrong, one line each; admins only.
	Detail []string `json:"detail,omitempty"`
}

func (rt *router) handleReady(w http.ResponseWriter, r *http.Request) {
	ready, detail := rt.check(r.Context())
	rt.logDetail(detail)
	body := readiness{Status: "ready"}
	code := http.StatusOK
	if !ready {
		body.Status, code = "unavailable", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	if rt.admin(r) {
		body.Detail = detail
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSONBody(w, code, body)
}

// admin reports whether r may see /readyz's detail: it carries the bearer
// token of an admin without a prefix, or the server has no tokens.
func (rt *router) admin(r *http.Request) bool {
	if rt.auth == nil {
		return true
	}
	p, ok := rt.auth.Principal(r)
	return ok && p.Can(refreshhttp.ScopeAdmin) && p.Prefix == ""
}

// logDetail logs detail when it differs from the detail last logged.
func (rt *router) logDetail(detail []string) {
	text := strings.Join(detail, "; ")
	rt.mu.Lock()
	changed := text != rt.lastLogged
	rt.lastLogged = text
	rt.mu.Unlock()
	switch {
	case !changed:
	case text == "":
		rt.log.Info("readiness: every check passes")
	default:
		rt.log.Warn("readiness: "+text, "detail", detail)
	}
}

// check pings both dependencies at once and reports whether serve is
// ready, with what is wrong, one line each: "postgres: ...", "redis:
// ...", "serve: starting", then the lines of the added checks.
func (rt *router) check(ctx context.Context) (bool, []string) {
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
	redisErr := rt.redis.Ping(ctx).Err()
	var detail []string
	if err := <-pg; err != nil {
		detail = append(detail, "postgres: "+rt.redact.String(err.Error()))
	}
	if redisErr != nil {
		detail = append(detail, "redis: "+rt.redact.String(rt.redisTarget+": "+redisErr.Error()))
	}
	if len(detail) == 0 && rt.api.Load() == nil {
		detail = append(detail, "serve: starting")
	}
	ready := len(detail) == 0
	for _, fn := range rt.details {
		detail = append(detail, fn(ctx)...)
	}
	return ready, detail
}

var errNotConnected = errors.New("not connected yet")

// writeJSONBody writes v as the JSON body of a response with status code.
func writeJSONBody(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to tell it
}
