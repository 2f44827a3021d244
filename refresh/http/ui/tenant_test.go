package ui_test

// The tenant-isolation suite (DESIGN.md section 4, Tenants): every route of
// the API and of the dashboard, asked by tokens limited to an id prefix
// while other customers hold 12,000 models, answers from the token's own
// models only, the same for a foreign id that exists and one that does
// not, in a bounded number of statements.

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/http/ui"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Tokens of the suite: acme- may do anything within its prefix, zz- may
// read; root has no prefix and seeds.
const (
	tenantAcme = "tok-acme"
	tenantZZ   = "tok-zz"
	tenantRoot = "tok-root"
)

// foreignMark is in every id, queue name and message of the other
// customers' models, and in nothing the server says by itself: an answer
// to a tenant that holds it (but for the foreign id the request named)
// names or shows another tenant's model.
const foreignMark = "forn"

// foreignModels is how many models the other customers hold.
const foreignModels = 12_000

// The foreign ids a path names: one that exists, one that does not.
const (
	foreignHeld    = "bigcorp-forn-00042"
	foreignMissing = "bigcorp-forn-99999"
)

// statementCounter counts the statements sent to PostgreSQL (a query, an
// exec, each query of a batch, a copy).
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.n.Add(1)
}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (c *statementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *statementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// tenantEvents are the latest lifecycle events: the other customers' and
// acme-1's.
type tenantEvents struct{}

func (tenantEvents) RecentEvents(_ context.Context, limit int) ([]refresh.Event, error) {
	var out []refresh.Event
	for i := range min(limit, 30) {
		out = append(out, refresh.Event{Type: refresh.EventFailure, ModelID: fmt.Sprintf("bigcorp-forn-%05d", i+1), At: now, Kind: "forn_error", Message: "forn failed"})
	}
	return append(out, refresh.Event{Type: refresh.EventSuccess, ModelID: "acme-1", At: now}), nil
}

// tenantDead holds one dead letter, about a foreign model.
type tenantDead struct{}

var deadLetter = refresh.DeadLetter{ID: "d1", At: now, Reason: "model_id: bigcorp-forn-00001 is unknown", Message: `{"model_id":"bigcorp-forn-00001"}`}

func (tenantDead) DeadLetters(context.Context, string, int) ([]refresh.DeadLetter, string, error) {
	return []refresh.DeadLetter{deadLetter}, "", nil
}
func (tenantDead) RequeueDead(context.Context, []string) (refresh.DeadResult, error) {
	return refresh.DeadResult{}, nil
}
func (tenantDead) RequeueAllDead(context.Context) (refresh.DeadResult, error) {
	return refresh.DeadResult{}, nil
}
func (tenantDead) DropDead(context.Context, []string) (refresh.DeadResult, error) {
	return refresh.DeadResult{}, nil
}
func (tenantDead) DropAllDead(context.Context) (refresh.DeadResult, error) {
	return refresh.DeadResult{}, nil
}

// tenantQueues knows the depth of every queue.
type tenantQueues struct{}

func (tenantQueues) Depths(_ context.Context, queues []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, q := range queues {
		out[q] = 7
	}
	return out, nil
}

// tenantServer is the API and the dashboard over one PostgreSQL store
// whose statements are counted.
type tenantServer struct {
	url        string
	statements *statementCounter
	svc        *refresh.Service
	pool       *pgxpool.Pool
}

// setupTenants starts the API (at /) and the dashboard (at /ui/) over a
// PostgreSQL store in a schema of its own, and seeds it: acme-1 to acme-3
// (acme-2 disabled, acme-3 failing), zz-1 and zz-2, and foreignModels
// models of another customer in every state, with neighbours of the
// tenants' ranges (acme, acme.forn, ACME-forn, zz.forn...), their history
// and audit.
func setupTenants(t *testing.T) *tenantServer {
	t.Helper()
	ctx := context.Background()
	cfg := migratedSchema(t)
	counter := &statementCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	ts := &tenantServer{statements: counter, pool: pool}
	ts.svc = &refresh.Service{Store: postgres.New(pool), Clock: refresh.NewVirtualClock(now)}
	root := refresh.WithAudit(ctx, refresh.AuditInfo{Actor: "root"})
	for _, id := range []string{"acme-1", "acme-2", "acme-3", "zz-1", "zz-2"} {
		_, _, err := ts.svc.Put(root, refresh.PutRequest{ID: id, Queue: "q-" + id[:2], Payload: json.RawMessage(`{"n":1}`),
			Policy: json.RawMessage(`{"schedule": "FREQ=DAILY;BYHOUR=6", "timezone": "UTC"}`)})
		require.NoError(t, err)
	}
	_, err = pool.Exec(ctx, `UPDATE models SET consecutive_failures = 2, failing_since = $1, last_error_kind = 'http_503',
		last_error_message = 'upstream 503', last_error_at = $1, disabled_at = CASE WHEN id = 'acme-2' THEN $1::timestamptz END,
		disabled_reason = CASE WHEN id = 'acme-2' THEN 'gave up' END WHERE id IN ('acme-2', 'acme-3')`, now)
	require.NoError(t, err)
	// The other customers: one INSERT of foreignModels models in every
	// state, then the neighbours of the tenants' ranges.
	_, err = pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at,
			consecutive_failures, failing_since, last_error_kind, last_error_message, last_error_at,
			disabled_at, disabled_reason, paused, attempt_uid, attempt_no, started_at, deadline_at, upstreams)
		SELECT id, 'fornq' || (i % 60), '{"forn": true}', m.policy_id, $1::timestamptz, $1::timestamptz + i * interval '1 minute',
			CASE WHEN i % 3 = 0 THEN 2 ELSE 0 END, CASE WHEN i % 3 = 0 THEN $1::timestamptz END,
			CASE WHEN i % 3 = 0 THEN 'forn_error' END, CASE WHEN i % 3 = 0 THEN 'forn failed' END, CASE WHEN i % 3 = 0 THEN $1::timestamptz END,
			CASE WHEN i % 5 = 0 THEN $1::timestamptz END, CASE WHEN i % 5 = 0 THEN 'forn gave up' END, i % 7 = 0,
			CASE WHEN i % 11 = 0 THEN 'forn-attempt-' || i END, CASE WHEN i % 11 = 0 THEN 1 ELSE 0 END,
			CASE WHEN i % 11 = 0 THEN $1::timestamptz END, CASE WHEN i % 11 = 0 THEN $1::timestamptz + interval '1 hour' END,
			CASE WHEN i % 13 = 0 THEN ARRAY['acme-1'] END
		FROM (SELECT 'bigcorp-forn-' || lpad(i::text, 5, '0') AS id, i FROM generate_series(1, $2::int) i
			UNION ALL SELECT unnest(ARRAY['acme', 'acme.forn', 'acme_forn', 'acmeforn', 'acmf-forn', 'ACME-forn',
				'acme0forn', 'zz.forn', 'zz_forn', 'zzz-forn', 'zz', 'Acme-forn']), 3) f,
			(SELECT policy_id FROM models WHERE id = 'acme-1') m`, now, foreignModels)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at, finished_at, outcome, failure)
		SELECT 'forn-done-' || i, 'bigcorp-forn-' || lpad(i::text, 5, '0'), 1, $1::timestamptz - interval '1 hour', $1::timestamptz, $1::timestamptz - interval '30 minutes', 'failure',
			ROW(NULL, NULL, 'forn_error', 'forn failed')::attempt_failure
		FROM generate_series(1, 100) i`, now)
	require.NoError(t, err)
	for _, id := range []string{foreignHeld, "acme.forn", "zz.forn"} {
		_, _, err := ts.svc.Act(refresh.WithAudit(ctx, refresh.AuditInfo{Actor: "forn-admin", Reason: "forn reason"}), id, refresh.ActionPause)
		require.NoError(t, err)
	}
	_, err = pool.Exec(ctx, "ANALYZE")
	require.NoError(t, err)

	auth, err := refreshhttp.NewAuth([]refreshhttp.Token{
		{Name: "acme", Hash: refreshhttp.HashToken(tenantAcme), Scopes: []refreshhttp.Scope{"admin"}, Prefix: "acme-"},
		{Name: "zz", Hash: refreshhttp.HashToken(tenantZZ), Scopes: []refreshhttp.Scope{"read"}, Prefix: "zz-"},
		{Name: "root", Hash: refreshhttp.HashToken(tenantRoot), Scopes: []refreshhttp.Scope{"admin"}},
	}, nil)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.New(ts.svc, ui.WithAuth(auth), ui.WithDeadLetters(tenantDead{}), ui.WithEvents(tenantEvents{}), ui.WithQueues(tenantQueues{})))
	mux.Handle("/", refreshhttp.NewServer(ts.svc, refreshhttp.WithAuth(auth), refreshhttp.WithDeadLetters(tenantDead{})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ts.url = srv.URL
	return ts
}

// tenantCase is one request of the suite.
type tenantCase struct {
	// route is the pattern the request is served by, as registered.
	route  string
	method string
	// path may hold {F}: the request is then sent twice, naming
	// foreignHeld and foreignMissing, and both answers must be the same.
	path string
	// body is the JSON body of an API request; form the form of a
	// dashboard POST, which gets the session's CSRF token.
	body string
	form url.Values
	// token is the bearer token of an API request, or the token the
	// dashboard session signed in with.
	token string
	// status is the status expected (0: any below 500).
	status int
	// contains must be in the body.
	contains []string
	// statements bounds the statements the request sends.
	statements int
	// whole marks a request of the token without a prefix, which sees
	// every model: only its cost is checked.
	whole bool
}

// tenantAnswer is what a request got, and what it cost.
type tenantAnswer struct {
	status     int
	header     http.Header
	body       string
	statements int64
	took       time.Duration
}

// send sends c with id in place of {F}, through br for the dashboard.
func (ts *tenantServer) send(t *testing.T, br map[string]*browser, c tenantCase, id string) tenantAnswer {
	t.Helper()
	path := strings.ReplaceAll(c.path, "{F}", id)
	var req *http.Request
	var err error
	dashboard := strings.HasPrefix(path, "/ui/")
	switch {
	case dashboard && c.method == http.MethodPost:
		form := url.Values{}
		for k, v := range c.form {
			form[k] = slices.Clone(v)
		}
		for k := range form {
			for i := range form[k] {
				form[k][i] = strings.ReplaceAll(form[k][i], "{F}", id)
			}
		}
		if !form.Has("csrf") && c.route != "POST /ui/login" {
			form.Set("csrf", br[c.token].csrf("/ui/preview"))
		}
		req, err = http.NewRequest(c.method, ts.url+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	default:
		req, err = http.NewRequest(c.method, ts.url+path, strings.NewReader(strings.ReplaceAll(c.body, "{F}", id)))
		require.NoError(t, err)
		if !dashboard {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
	}
	client := http.DefaultClient
	if dashboard {
		client = br[c.token].c
	}
	ts.statements.n.Store(0)
	start := time.Now()
	res, err := client.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	return tenantAnswer{status: res.StatusCode, header: res.Header, body: string(body), statements: ts.statements.n.Load(), took: time.Since(start)}
}

// markedWord matches a word that holds foreignMark.
var markedWord = regexp.MustCompile(`(?i)[A-Za-z0-9._:@-]*` + foreignMark + `[A-Za-z0-9._:@-]*`)

// leaks returns what of a names another tenant's model: every word
// holding foreignMark in its body and headers, once the words the request
// itself sent (request: its path, body and form) are taken out.
func leaks(a tenantAnswer, request string) []string {
	texts := []string{a.body}
	for k, vs := range a.header {
		for _, v := range vs {
			texts = append(texts, k+": "+v)
		}
	}
	sent := markedWord.FindAllString(request, -1)
	var out []string
	for _, text := range texts {
		for _, w := range sent {
			for _, v := range []string{w, url.PathEscape(w), url.QueryEscape(w)} {
				text = strings.ReplaceAll(text, v, "{sent}")
			}
		}
		out = append(out, markedWord.FindAllString(text, 5)...)
	}
	return out
}

// sameShape reports how the answers to the held and the missing foreign id
// differ, "" if they do not (the ids taken out, the Date and cookies
// aside).
func sameShape(held, missing tenantAnswer) string {
	if held.status != missing.status {
		return fmt.Sprintf("status %d for the id that exists, %d for the other", held.status, missing.status)
	}
	norm := func(a tenantAnswer, id string) string {
		s := a.body
		for _, v := range []string{id, url.PathEscape(id), url.QueryEscape(id)} {
			s = strings.ReplaceAll(s, v, "{F}")
		}
		return s
	}
	if b1, b2 := norm(held, foreignHeld), norm(missing, foreignMissing); b1 != b2 {
		return "bodies differ:\n" + b1 + "\n---\n" + b2
	}
	keys := func(h http.Header) string {
		var out []string
		for k := range h {
			if k != "Date" && k != "Set-Cookie" {
				out = append(out, k+"="+strings.ReplaceAll(strings.ReplaceAll(strings.Join(h[k], ","), foreignHeld, "{F}"), foreignMissing, "{F}"))
			}
		}
		slices.Sort(out)
		return strings.Join(out, "\n")
	}
	if h1, h2 := keys(held.header), keys(missing.header); h1 != h2 {
		return "headers differ:\n" + h1 + "\n---\n" + h2
	}
	return ""
}

// apiRoutes returns the routes of the API, read from its OpenAPI
// document (which openapi_test.go checks against the routes registered).
func (ts *tenantServer) apiRoutes(t *testing.T) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.url+"/openapi.json", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tenantRoot)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&doc))
	var out []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if slices.Contains([]string{"get", "put", "post", "patch", "delete"}, method) {
				out = append(out, strings.ToUpper(method)+" "+path)
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// dashboardRoutes returns the patterns ui.New registers, read from ui.go:
// every h.mux.Handle and h.mux.HandleFunc, with the base path /ui.
func dashboardRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "ui.go", nil, 0)
	require.NoError(t, err)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
			return true
		}
		if x, ok := sel.X.(*ast.SelectorExpr); !ok || x.Sel.Name != "mux" {
			return true
		}
		var pattern strings.Builder
		var walk func(e ast.Expr)
		walk = func(e ast.Expr) {
			switch e := e.(type) {
			case *ast.BinaryExpr:
				walk(e.X)
				walk(e.Y)
			case *ast.BasicLit:
				s, err := strconv.Unquote(e.Value)
				require.NoError(t, err)
				pattern.WriteString(s)
			case *ast.Ident: // the base path
				pattern.WriteString("/ui")
			default:
				t.Fatalf("ui.go: a route pattern of a form this test cannot read: %T", e)
			}
		}
		walk(call.Args[0])
		out = append(out, pattern.String())
		return true
	})
	require.NotEmpty(t, out)
	return out
}

// tenantCases are the requests of the suite. Reads send at most 3
// statements, writes of one model at most 12: none grows with the
// store.
func tenantCases() []tenantCase {
	const reads, writes = 3, 12
	form := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	var cases []tenantCase
	add := func(c tenantCase) { cases = append(cases, c) }
	// The API.
	add(tenantCase{route: "GET /healthz", method: "GET", path: "/healthz", token: tenantAcme})
	add(tenantCase{route: "GET /readyz", method: "GET", path: "/readyz", token: tenantAcme})
	add(tenantCase{route: "GET /openapi.json", method: "GET", path: "/openapi.json", token: tenantAcme, status: 200})
	add(tenantCase{route: "GET /metrics", method: "GET", path: "/metrics", token: tenantAcme, status: 403})
	for _, q := range []string{"", "?limit=1", "?limit=1&after=acme-1", "?limit=1&after=acme-3", "?after=bigcorp-forn-05000",
		"?after=a", "?after=zzzz", "?limit=1&after=acme-2", "?disabled=true", "?failing=true&limit=1", "?queue=fornq1", "?running=true"} {
		add(tenantCase{route: "GET /models", method: "GET", path: "/models" + q, token: tenantAcme, status: 200, statements: 1})
	}
	add(tenantCase{route: "GET /models", method: "GET", path: "/models", token: tenantZZ, status: 200, statements: 1, contains: []string{`"zz-1"`, `"zz-2"`}})
	add(tenantCase{route: "GET /models", method: "GET", path: "/models?after=zz.forn", token: tenantZZ, status: 200, statements: 1})
	add(tenantCase{route: "GET /models", method: "GET", path: "/models?limit=0", token: tenantAcme, status: 400, contains: []string{"limit"}})
	add(tenantCase{route: "GET /models", method: "GET", path: "/models?after=..%2F", token: tenantAcme, status: 400, contains: []string{"after"}})
	add(tenantCase{route: "GET /models", method: "GET", path: "/models?prefix=bigcorp-", token: tenantAcme, status: 400, contains: []string{"prefix"}})
	add(tenantCase{route: "GET /models/{id}", method: "GET", path: "/models/acme-1", token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "GET /models/{id}", method: "GET", path: "/models/{F}", token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /models/{id}", method: "GET", path: "/models/{F}", token: tenantZZ, status: 403})
	add(tenantCase{route: "PUT /models/{id}", method: "PUT", path: "/models/acme-9", body: `{"payload": {"n": 9}}`, token: tenantAcme, status: 201, statements: writes})
	add(tenantCase{route: "PUT /models/{id}", method: "PUT", path: "/models/{F}", body: `{}`, token: tenantAcme, status: 403})
	add(tenantCase{route: "PUT /models/{id}", method: "PUT", path: "/models/acme-8", body: `{"upstreams": ["{F}"]}`, token: tenantAcme, status: 400, contains: []string{"upstreams[0]"}})
	add(tenantCase{route: "PATCH /models/{id}", method: "PATCH", path: "/models/acme-9", body: `{"payload": {"n": 10}}`, token: tenantAcme, status: 200, statements: writes})
	add(tenantCase{route: "PATCH /models/{id}", method: "PATCH", path: "/models/{F}", body: `{}`, token: tenantAcme, status: 403})
	add(tenantCase{route: "PATCH /models/{id}", method: "PATCH", path: "/models/acme-9", body: `{"upstreams": ["{F}"]}`, token: tenantAcme, status: 400, contains: []string{"upstreams[0]"}})
	add(tenantCase{route: "GET /models/{id}/attempts", method: "GET", path: "/models/acme-1/attempts", token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "GET /models/{id}/attempts", method: "GET", path: "/models/{F}/attempts", token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /models/{id}/audit", method: "GET", path: "/models/acme-1/audit", token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "GET /models/{id}/audit", method: "GET", path: "/models/{F}/audit", token: tenantAcme, status: 403})
	for _, action := range []string{"trigger", "enable", "pause", "resume", "cancel"} {
		route := "POST /models/{id}/" + action
		add(tenantCase{route: route, method: "POST", path: "/models/acme-1/" + action, token: tenantAcme, status: 200, statements: writes})
		add(tenantCase{route: route, method: "POST", path: "/models/{F}/" + action, token: tenantAcme, status: 403})
		route = "POST /bulk/" + action
		add(tenantCase{route: route, method: "POST", path: "/bulk/" + action, body: `{"all": true}`, token: tenantAcme, status: 200, statements: 2 * writes})
		add(tenantCase{route: route, method: "POST", path: "/bulk/" + action, body: `{"selector": {"state": "disabled"}, "dry_run": true}`, token: tenantAcme, status: 200, statements: 1})
		add(tenantCase{route: route, method: "POST", path: "/bulk/" + action, body: `{"selector": {"prefix": "{F}"}, "dry_run": true}`, token: tenantAcme, status: 403})
		add(tenantCase{route: route, method: "POST", path: "/bulk/" + action, body: `{"selector": {"prefix": "acme-"}, "dry_run": true}`, token: tenantZZ, status: 403})
	}
	add(tenantCase{route: "POST /bulk/pause", method: "POST", path: "/bulk/pause", body: `{"selector": {"prefix": "acme"}}`, token: tenantAcme, status: 403, contains: []string{"selector.prefix"}})
	add(tenantCase{route: "POST /bulk/pause", method: "POST", path: "/bulk/pause", body: `{"selector": {"state": "sleeping"}}`, token: tenantAcme, status: 400, contains: []string{"selector.state"}})
	add(tenantCase{route: "DELETE /models/{id}", method: "DELETE", path: "/models/acme-9", token: tenantAcme, status: 204, statements: writes})
	add(tenantCase{route: "DELETE /models/{id}", method: "DELETE", path: "/models/{F}", token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /limits", method: "GET", path: "/limits", token: tenantAcme, status: 403})
	add(tenantCase{route: "PUT /limits/{kind}/{key}", method: "PUT", path: "/limits/prefix/acme-", body: `{"max_running": 1}`, token: tenantAcme, status: 403})
	add(tenantCase{route: "DELETE /limits/{kind}/{key}", method: "DELETE", path: "/limits/prefix/acme-", token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /dead", method: "GET", path: "/dead", token: tenantAcme, status: 403})
	add(tenantCase{route: "POST /dead/requeue", method: "POST", path: "/dead/requeue", body: `{"ids": ["d1"]}`, token: tenantAcme, status: 403})
	add(tenantCase{route: "POST /dead/drop", method: "POST", path: "/dead/drop", body: `{"ids": ["d1"]}`, token: tenantAcme, status: 403})
	add(tenantCase{route: "DELETE /dead/{id}", method: "DELETE", path: "/dead/d1", token: tenantAcme, status: 403})

	// The dashboard, signed in with the token.
	add(tenantCase{route: "GET /ui/static/", method: "GET", path: "/ui/static/style.css", token: tenantAcme, status: 200})
	add(tenantCase{route: "GET /ui/login", method: "GET", path: "/ui/login?next=/ui/models/{F}", token: tenantAcme, status: 200})
	add(tenantCase{route: "GET /ui/{$}", method: "GET", path: "/ui/", token: tenantAcme, status: 200, statements: reads,
		contains: []string{`<span class="n">3</span><span class="l">models</span>`}})
	add(tenantCase{route: "GET /ui/{$}", method: "GET", path: "/ui/", token: tenantZZ, status: 200, statements: reads,
		contains: []string{`<span class="n">2</span><span class="l">models</span>`, "q-zz"}})
	for _, q := range []string{"", "?limit=1", "?limit=1&after=acme-1", "?after=bigcorp-forn-05000", "?after=zzzz", "?prefix=acme", "?prefix=bigcorp-",
		"?prefix=acme-2&limit=1", "?state=failing", "?queue=q-zz"} {
		add(tenantCase{route: "GET /ui/models", method: "GET", path: "/ui/models" + q, token: tenantAcme, status: 200, statements: 1})
	}
	add(tenantCase{route: "GET /ui/models", method: "GET", path: "/ui/models", token: tenantZZ, status: 200, statements: 1, contains: []string{"zz-1", "zz-2"}})
	add(tenantCase{route: "GET /ui/models", method: "GET", path: "/ui/models?limit=1&after=zz-1", token: tenantZZ, status: 200, statements: 1, contains: []string{"zz-2"}})
	add(tenantCase{route: "GET /ui/models", method: "GET", path: "/ui/models?limit=5000", token: tenantAcme, status: 400, contains: []string{"limit"}})
	add(tenantCase{route: "GET /ui/models/{id}", method: "GET", path: "/ui/models/acme-1", token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "GET /ui/models/{id}", method: "GET", path: "/ui/models/{F}", token: tenantAcme, status: 403})
	add(tenantCase{route: "POST /ui/models/{id}/{action}", method: "POST", path: "/ui/models/acme-1/pause", token: tenantAcme, status: 303, statements: writes})
	add(tenantCase{route: "POST /ui/models/{id}/{action}", method: "POST", path: "/ui/models/{F}/pause", token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /ui/models/{id}/replay", method: "GET", path: "/ui/models/acme-1/replay", token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "GET /ui/models/{id}/replay", method: "GET", path: "/ui/models/{F}/replay", token: tenantAcme, status: 403})
	add(tenantCase{route: "POST /ui/models/{id}/replay", method: "POST", path: "/ui/models/acme-1/replay", form: form("days", "7", "policy", `{"timeout": "1h"}`), token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "POST /ui/models/{id}/replay", method: "POST", path: "/ui/models/{F}/replay", form: form("days", "7"), token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /ui/preview", method: "GET", path: "/ui/preview", token: tenantAcme, status: 200})
	add(tenantCase{route: "GET /ui/preview", method: "GET", path: "/ui/preview?model=acme-1", token: tenantAcme, status: 200, statements: reads})
	add(tenantCase{route: "GET /ui/preview", method: "GET", path: "/ui/preview?model={F}", token: tenantAcme})
	add(tenantCase{route: "POST /ui/preview", method: "POST", path: "/ui/preview", form: form("policy", `{"timeout": "1h"}`, "attempts", "fail"), token: tenantAcme})
	add(tenantCase{route: "POST /ui/preview", method: "POST", path: "/ui/preview", form: form("model", "{F}", "policy", `{"timeout": "1h"}`), token: tenantAcme})
	add(tenantCase{route: "GET /ui/dead", method: "GET", path: "/ui/dead", token: tenantAcme, status: 403})
	add(tenantCase{route: "POST /ui/dead", method: "POST", path: "/ui/dead", form: form("op", "drop", "id", "d1"), token: tenantAcme, status: 403})
	// The limits concern every tenant: as GET, PUT and DELETE /limits, the
	// page and its form refuse a token limited to a prefix, admin or not.
	add(tenantCase{route: "GET /ui/limits", method: "GET", path: "/ui/limits", token: tenantAcme, status: 403})
	add(tenantCase{route: "GET /ui/limits", method: "GET", path: "/ui/limits", token: tenantZZ, status: 403})
	add(tenantCase{route: "POST /ui/limits", method: "POST", path: "/ui/limits", form: form("do", "set", "kind", "prefix", "key", "acme-", "max_running", "1"), token: tenantAcme, status: 403})
	add(tenantCase{route: "POST /ui/limits", method: "POST", path: "/ui/limits", form: form("do", "delete", "kind", "prefix", "key", "acme-"), token: tenantAcme, status: 403})
	add(tenantCase{route: "/ui/", method: "GET", path: "/ui/models/{F}/nope", token: tenantAcme, status: 404})
	add(tenantCase{route: "POST /ui/login", method: "POST", path: "/ui/login", form: form("token", "nope", "next", "/ui/models/{F}"), token: tenantZZ})
	// The token without a prefix: an overview and a page cost the same
	// bounded reads, whatever the store holds.
	add(tenantCase{route: "GET /ui/{$}", method: "GET", path: "/ui/", token: tenantRoot, status: 200, statements: reads, whole: true,
		contains: []string{`<span class="n">10000+</span><span class="l">models</span>`, "Counted the first 10000 models by id"}})
	add(tenantCase{route: "GET /ui/models", method: "GET", path: "/ui/models?after=bigcorp-forn-05000", token: tenantRoot, status: 200, statements: 1, whole: true})
	add(tenantCase{route: "GET /models", method: "GET", path: "/models?limit=1000", token: tenantRoot, status: 200, statements: 1, whole: true})
	add(tenantCase{route: "GET /ui/limits", method: "GET", path: "/ui/limits", token: tenantRoot, status: 200, statements: reads, whole: true})
	add(tenantCase{route: "POST /ui/logout", method: "POST", path: "/ui/logout", token: tenantZZ, status: 303})
	return cases
}

// TestTenantIsolation walks every route of the API and of the dashboard
// (enumerated from the OpenAPI document and from ui.go: a route without a
// case fails it) with prefix-limited tokens while another customer holds
// 12,000 models: no answer names or counts a foreign model (in its body,
// headers or links), a foreign id gets the same answer whether it exists
// or not, and no request sends more statements than its bound, whatever
// the store holds.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	ts := setupTenants(t)
	cases := tenantCases()
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.route] = true
	}
	for _, r := range append(ts.apiRoutes(t), dashboardRoutes(t)...) {
		require.True(t, covered[r], "route %q has no case in the tenant-isolation suite: add one to tenantCases", r)
	}

	browsers := map[string]*browser{}
	for _, token := range []string{tenantAcme, tenantZZ, tenantRoot} {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		br := &browser{t: t, base: ts.url, c: &http.Client{Jar: jar,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		res, _ := br.post("/ui/login", url.Values{"csrf": {br.csrf("/ui/login")}, "token": {token}, "next": {"/ui/"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		browsers[token] = br
	}
	var report strings.Builder
	for _, c := range cases {
		what := strings.TrimSpace(c.method + " " + c.path + " " + c.body + " (" + c.token + ")")
		ids := []string{""}
		if strings.Contains(c.path+c.body+strings.Join(flatten(c.form), ""), "{F}") {
			ids = []string{foreignHeld, foreignMissing}
		}
		var answers []tenantAnswer
		for _, id := range ids {
			a := ts.send(t, browsers, c, id)
			answers = append(answers, a)
			fmt.Fprintf(&report, "%-90s %3d %5d statements %9s\n", strings.ReplaceAll(what, "{F}", id), a.status, a.statements, a.took.Round(10*time.Microsecond))
			sent := strings.ReplaceAll(c.path+" "+c.body+" "+strings.Join(flatten(c.form), " "), "{F}", id)
			assert.True(t, c.whole || len(leaks(a, sent)) == 0, "%s (id %q) names another tenant's model:\n%s", what, id, cut(a.body))
			if c.status != 0 {
				assert.Equal(t, c.status, a.status, "%s (id %q): %s", what, id, cut(a.body))
			} else {
				assert.Less(t, a.status, 500, "%s (id %q): %s", what, id, cut(a.body))
			}
			for _, s := range c.contains {
				assert.Contains(t, a.body, s, what)
			}
			if a.status >= 400 && a.status < 500 && a.status != 404 && !strings.HasPrefix(c.path, "/ui/") && c.status >= 400 {
				assert.Contains(t, a.body, `"error"`, "%s: a refusal says why", what)
			}
			bound := int64(c.statements)
			if c.statements == 0 && c.status < 400 {
				bound = 3 // a page without models
			}
			assert.LessOrEqual(t, a.statements, bound, "%s (id %q) sent %d statements", what, id, a.statements)
		}
		if len(answers) == 2 {
			assert.Empty(t, sameShape(answers[0], answers[1]), "%s: a foreign id that exists and one that does not get different answers", what)
		}
	}
	t.Logf("requests with %d foreign models:\n%s", foreignModels, report.String())
}

// cut returns the start of body, for a message.
func cut(body string) string { return body[:min(len(body), 600)] }

// flatten returns the values of form.
func flatten(form url.Values) []string {
	var out []string
	for _, vs := range form {
		out = append(out, vs...)
	}
	return out
}
