package http_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

func TestHashToken(t *testing.T) {
	t.Parallel()
	// SHA-256 of "test", as sha256sum prints it.
	require.Equal(t, "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", refreshhttp.HashToken("test"))
}

func TestPrincipal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scopes []refreshhttp.Scope
		can    map[refreshhttp.Scope]bool
	}{
		{nil, map[refreshhttp.Scope]bool{"read": false, "write": false, "admin": false}},
		{[]refreshhttp.Scope{"read"}, map[refreshhttp.Scope]bool{"read": true, "write": false, "admin": false}},
		{[]refreshhttp.Scope{"write"}, map[refreshhttp.Scope]bool{"read": true, "write": true, "admin": false}},
		{[]refreshhttp.Scope{"admin"}, map[refreshhttp.Scope]bool{"read": true, "write": true, "admin": true}},
		{[]refreshhttp.Scope{"read", "admin"}, map[refreshhttp.Scope]bool{"read": true, "write": true, "admin": true}},
		{[]refreshhttp.Scope{"admin"}, map[refreshhttp.Scope]bool{"": false, "owner": false}},
	}
	for _, tt := range tests {
		p := refreshhttp.Principal{Name: "t", Scopes: tt.scopes}
		for s, want := range tt.can {
			require.Equal(t, want, p.Can(s), "%v can %q", tt.scopes, s)
		}
	}
	p := refreshhttp.Principal{Prefix: "acme-"}
	require.True(t, p.Owns("acme-1"))
	require.True(t, p.Owns("acme-"))
	require.False(t, p.Owns("acme"))
	require.False(t, p.Owns("globex-acme-1"))
	require.True(t, refreshhttp.Principal{}.Owns("anything"))

	_, ok := refreshhttp.PrincipalFrom(context.Background())
	require.False(t, ok)
	got, ok := refreshhttp.PrincipalFrom(refreshhttp.ContextWithPrincipal(context.Background(), p))
	require.True(t, ok)
	require.Equal(t, p, got)
}

func TestNewAuthRefuses(t *testing.T) {
	t.Parallel()
	h := refreshhttp.HashToken
	ok := refreshhttp.Token{Name: "ops", Hash: h("a"), Scopes: []refreshhttp.Scope{"admin"}}
	tests := []struct {
		name   string
		tokens []refreshhttp.Token
		want   string
	}{
		{"none", nil, "tokens: must list at least one token"},
		{"no name", []refreshhttp.Token{{Hash: h("a"), Scopes: []refreshhttp.Scope{"read"}}},
			`tokens[0].name: must be 1 to 100 letters, digits or ._@:- starting with a letter or digit, got ""`},
		{"same name", []refreshhttp.Token{ok, {Name: "ops", Hash: h("b"), Scopes: []refreshhttp.Scope{"read"}}},
			`tokens[1].name: "ops" is the name of tokens[0] too`},
		{"raw token as hash", []refreshhttp.Token{{Name: "x", Hash: "s3cret", Scopes: []refreshhttp.Scope{"read"}}},
			"tokens[0].hash: must be sha256: followed by 64 hex digits, the hash of the token (freshen token hash prints it)"},
		{"short hash", []refreshhttp.Token{{Name: "x", Hash: h("a")[:40], Scopes: []refreshhttp.Scope{"read"}}},
			"tokens[0].hash: must be sha256: followed by 64 hex digits, the hash of the token (freshen token hash prints it)"},
		{"hash without its sha256: prefix", []refreshhttp.Token{ok, {Name: "ops2", Hash: strings.ToUpper(h("a")[7:]), Scopes: []refreshhttp.Scope{"read"}}},
			"tokens[1].hash: must be sha256: followed by 64 hex digits, the hash of the token (freshen token hash prints it)"},
		{"same hash, other case", []refreshhttp.Token{ok, {Name: "ops2", Hash: "SHA256:" + strings.ToUpper(h("a")[7:]), Scopes: []refreshhttp.Scope{"read"}}},
			"tokens[1].hash: is the hash of tokens[0] too: a token must name one holder"},
		{"no scope", []refreshhttp.Token{{Name: "x", Hash: h("a")}}, "tokens[0].scopes: must list read, write or admin"},
		{"unknown scope", []refreshhttp.Token{{Name: "x", Hash: h("a"), Scopes: []refreshhttp.Scope{"read", "owner"}}},
			`tokens[0].scopes[1]: must be read, write or admin, got "owner"`},
		{"bad prefix", []refreshhttp.Token{{Name: "x", Hash: h("a"), Scopes: []refreshhttp.Scope{"read"}, Prefix: "acme/"}},
			`tokens[0].prefix: must be the start of a model id (` + refresh.IDRule + `), got "acme/"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := refreshhttp.NewAuth(tt.tokens, nil)
			require.EqualError(t, err, tt.want)
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
		})
	}
}

// Tokens of the auth tests: the secret of each is its name.
var testTokens = []refreshhttp.Token{
	{Name: "reader", Hash: refreshhttp.HashToken("reader"), Scopes: []refreshhttp.Scope{"read"}},
	{Name: "writer", Hash: refreshhttp.HashToken("writer"), Scopes: []refreshhttp.Scope{"write"}},
	{Name: "admin", Hash: refreshhttp.HashToken("admin"), Scopes: []refreshhttp.Scope{"admin"}},
	{Name: "acme", Hash: refreshhttp.HashToken("acme"), Scopes: []refreshhttp.Scope{"admin"}, Prefix: "acme-"},
}

// setupAuth returns a bundle whose server takes testTokens and holds the
// models acme-1, acme-2, globex-1 and acme; its refusals are logged to
// b.authLogs.
func setupAuth(t *testing.T, opts ...refreshhttp.Option) *bundle {
	t.Helper()
	logs := &bytes.Buffer{}
	a, err := refreshhttp.NewAuth(testTokens, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	b := setup(t, append(opts, refreshhttp.WithAuth(a))...)
	b.authLogs = logs
	for _, id := range []string{"acme-1", "acme-2", "globex-1", "acme"} {
		req := httptest.NewRequest("PUT", "/models/"+id, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer admin")
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	}
	return b
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	const challenge = `Bearer realm="freshen"`
	const invalidToken = `Bearer realm="freshen", error="invalid_token"`
	tests := []struct {
		name          string
		method, path  string
		authorization string
		code          int
		error         string
		challenge     string
	}{
		{"health is open", "GET", "/healthz", "", 200, "", ""},
		{"no token", "GET", "/models", "", 401, `missing bearer token: send the header "Authorization: Bearer <token>"`, challenge},
		{"no token, unknown route", "GET", "/nowhere", "", 401, `missing bearer token: send the header "Authorization: Bearer <token>"`, challenge},
		{"wrong token", "GET", "/models/acme-1", "Bearer nobody", 401, "unknown bearer token", invalidToken},
		{"token hash as token", "GET", "/models/acme-1", "Bearer " + refreshhttp.HashToken("admin"), 401, "unknown bearer token", invalidToken},
		{"basic auth", "GET", "/models", "Basic YWRtaW46YWRtaW4=", 401, `Authorization: must be "Bearer <token>"`, invalidToken},
		{"empty bearer", "GET", "/models", "Bearer ", 401, `Authorization: must be "Bearer <token>"`, invalidToken},
		{"scheme in lower case", "GET", "/models", "bearer reader", 200, "", ""},
		{"metrics need read", "GET", "/metrics", "", 401, `missing bearer token: send the header "Authorization: Bearer <token>"`, challenge},
		{"metrics with read", "GET", "/metrics", "Bearer reader", 200, "", ""},
		{"read token reads", "GET", "/models/acme-1/attempts", "Bearer reader", 200, "", ""},
		{"read token on an action", "POST", "/models/acme-1/trigger", "Bearer reader", 403,
			`token "reader" has scope read; POST /models/acme-1/trigger needs scope write`,
			`Bearer realm="freshen", error="insufficient_scope", scope="write"`},
		{"read token on a put", "PUT", "/models/acme-3", "Bearer reader", 403,
			`token "reader" has scope read; PUT /models/acme-3 needs scope write`,
			`Bearer realm="freshen", error="insufficient_scope", scope="write"`},
		{"write token acts", "POST", "/models/acme-1/pause", "Bearer writer", 200, "", ""},
		{"write token patches", "PATCH", "/models/acme-1", "Bearer writer", 200, "", ""},
		{"write token may not delete", "DELETE", "/models/acme-2", "Bearer writer", 403,
			`token "writer" has scope write; DELETE /models/acme-2 needs scope admin`,
			`Bearer realm="freshen", error="insufficient_scope", scope="admin"`},
		{"prefix token on its model", "GET", "/models/acme-1", "Bearer acme", 200, "", ""},
		{"prefix token on another customer's model", "GET", "/models/globex-1", "Bearer acme", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token on a model that is only a prefix away", "POST", "/models/acme/trigger", "Bearer acme", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token creates outside", "PUT", "/models/globex-2", "Bearer acme", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token deletes outside", "DELETE", "/models/globex-1", "Bearer acme", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token history outside", "GET", "/models/globex-1/attempts", "Bearer acme", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token on metrics", "GET", "/metrics", "Bearer acme", 403,
			`token "acme" is limited to the models whose id starts with "acme-"; GET /metrics needs a token without a prefix`, ""},
		{"known token, unknown route", "GET", "/nowhere", "Bearer reader", 404, "no route for GET /nowhere", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := ""
			if tt.method == "PUT" || tt.method == "PATCH" {
				body = `{}`
			}
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(body))
			if tt.authorization != "" {
				req.Header.Set("Authorization", tt.authorization)
			}
			rec := httptest.NewRecorder()
			b.handler.ServeHTTP(rec, req)
			require.Equal(t, tt.code, rec.Code, rec.Body.String())
			require.Equal(t, tt.challenge, rec.Header().Get("WWW-Authenticate"))
			if tt.error != "" {
				require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
				require.JSONEq(t, fmt.Sprintf(`{"error": %q}`, tt.error), rec.Body.String())
			}
		})
	}
	// Refusals are logged with the token's name.
	require.Contains(t, b.authLogs.String(), `level=INFO msg="request refused" status=403 method=GET path=/models/globex-1 token=acme`)
	require.Contains(t, b.authLogs.String(), `level=INFO msg="request refused" status=401 method=GET path=/models/acme-1 remote=192.0.2.1:1234 why="unknown bearer token"`)

	// Nothing refused was written.
	_, err := b.store.Get(context.Background(), "globex-2")
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))
	m, err := b.store.Get(context.Background(), "globex-1")
	require.NoError(t, err)
	require.NotNil(t, m)
}

func TestAuthTwoHeaders(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	req := httptest.NewRequest("GET", "/models", nil)
	req.Header.Add("Authorization", "Bearer reader")
	req.Header.Add("Authorization", "Bearer admin")
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.JSONEq(t, `{"error": "Authorization: must be given once"}`, rec.Body.String())
}

func TestAuthListFiltersByPrefix(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	list := func(token, query string) refreshhttp.ModelList {
		t.Helper()
		c := b.client(t, token)
		res, err := c.List(context.Background(), refreshhttp.ListOptions{Limit: 1, After: query})
		require.NoError(t, err)
		return res
	}
	var ids []string
	for after := ""; ; {
		page := list("acme", after)
		for _, m := range page.Models {
			ids = append(ids, m.ID)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	require.Equal(t, []string{"acme-1", "acme-2"}, ids)

	res, err := b.client(t, "admin").List(context.Background(), refreshhttp.ListOptions{})
	require.NoError(t, err)
	require.Len(t, res.Models, 4)
}

// TestAuthListReadsItsRange lists for a prefix-limited token among more
// models of other customers than a page holds: every page, whatever the
// after the caller chooses, holds only its models, and its next is one of
// them or "".
func TestAuthListReadsItsRange(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	const others = 20_000 // ids a-00000... sort before acme-, b-... after
	var changes []refresh.Change
	for i := range others {
		for _, p := range []string{"a-", "b-"} {
			changes = append(changes, refresh.Change{Model: refresh.Model{ID: fmt.Sprintf("%s%05d", p, i), Policy: refresh.DefaultPolicy(), CreatedAt: start}})
		}
	}
	require.NoError(t, b.store.Modify(context.Background(), nil, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: changes}, nil
	}))
	c := b.client(t, "acme")
	for _, r := range []struct {
		after string
		limit int
		ids   []string
		next  string
	}{
		{"", 1000, []string{"acme-1", "acme-2"}, ""},
		{"a-00005", 1000, []string{"acme-1", "acme-2"}, ""},
		{"", 1, []string{"acme-1"}, "acme-1"},
		{"acme-1", 1, []string{"acme-2"}, ""},
		{"acme-2", 1, []string{}, ""},
		{"b-00005", 1000, []string{}, ""},
		{"zz", 1000, []string{}, ""},
	} {
		page, err := c.List(context.Background(), refreshhttp.ListOptions{Limit: r.limit, After: r.after})
		require.NoError(t, err, "after %q", r.after)
		ids := []string{}
		for _, m := range page.Models {
			ids = append(ids, m.ID)
		}
		require.Equal(t, r.ids, ids, "after %q, limit %d", r.after, r.limit)
		require.Equal(t, r.next, page.Next, "after %q, limit %d", r.after, r.limit)
	}
}

// client returns a Client of b's handler, served over HTTP, with token.
func (b *bundle) client(t *testing.T, token string) *refreshhttp.Client {
	t.Helper()
	if b.server == nil {
		b.server = httptest.NewServer(b.handler)
		t.Cleanup(b.server.Close)
	}
	c, err := refreshhttp.NewClient(b.server.URL, token, b.server.Client())
	require.NoError(t, err)
	return c
}

// TestErrorLogNamesToken: a failed request is logged with the name of the
// token that sent it.
func TestErrorLogNamesToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := b.handler.(*refreshhttp.Server)
	req := httptest.NewRequest("GET", "/models/x", nil)
	req = req.WithContext(refreshhttp.ContextWithPrincipal(req.Context(), refreshhttp.Principal{Name: "ci"}))
	srv.Error(httptest.NewRecorder(), req, errors.New("disk on fire"))
	require.Contains(t, b.logs.String(), `msg="request failed" method=GET path=/models/x err="disk on fire" token=ci`)
}

// BenchmarkAuthRequire measures the token check of one request among 1,000
// known tokens (the hash of the token, then a constant-time comparison
// with each).
func BenchmarkAuthRequire(b *testing.B) {
	tokens := make([]refreshhttp.Token, 1000)
	for i := range tokens {
		name := fmt.Sprintf("t%d", i)
		tokens[i] = refreshhttp.Token{Name: name, Hash: refreshhttp.HashToken(name), Scopes: []refreshhttp.Scope{"read"}}
	}
	a, err := refreshhttp.NewAuth(tokens, nil)
	require.NoError(b, err)
	h := a.Require(refreshhttp.ScopeRead, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("GET", "/models", nil)
	req.Header.Set("Authorization", "Bearer t500")
	rec := httptest.NewRecorder()
	for b.Loop() {
		h.ServeHTTP(rec, req)
	}
}

func TestAuthLookup(t *testing.T) {
	t.Parallel()
	a, err := refreshhttp.NewAuth([]refreshhttp.Token{
		{Name: "ops", Hash: refreshhttp.HashToken("secret-ops"), Scopes: []refreshhttp.Scope{"admin"}},
		{Name: "acme", Hash: refreshhttp.HashToken("secret-acme"), Scopes: []refreshhttp.Scope{"read"}, Prefix: "acme-"},
	}, nil)
	require.NoError(t, err)
	p, ok := a.Lookup("secret-acme")
	require.True(t, ok)
	require.Equal(t, refreshhttp.Principal{Name: "acme", Scopes: []refreshhttp.Scope{"read"}, Prefix: "acme-"}, p)
	p, ok = a.Lookup("secret-ops")
	require.True(t, ok)
	require.Equal(t, "ops", p.Name)
	for _, unknown := range []string{"", "secret", "secret-ops ", "Bearer secret-ops"} {
		_, ok := a.Lookup(unknown)
		require.False(t, ok, "%q", unknown)
	}
}
