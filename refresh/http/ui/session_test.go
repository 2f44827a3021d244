package ui_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/http/ui"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// sessionCookie returns the session cookie of br's jar.
func (br *browser) sessionCookie() *http.Cookie {
	u, err := url.Parse(br.base + "/ui/")
	require.NoError(br.t, err)
	for _, c := range br.c.Jar.Cookies(u) {
		if c.Name == "freshen_session" {
			return c
		}
	}
	return nil
}

// as returns a browser whose only cookie is c, as a copy of another
// browser's cookie would make.
func (b *bundle) as(t *testing.T, c *http.Cookie) *browser {
	br := b.browser(t)
	u, err := url.Parse(b.server.URL + "/ui/")
	require.NoError(t, err)
	br.c.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: "/ui/"}})
	return br
}

// signedOut reports whether br's next page is the sign-in form.
func (br *browser) signedOut() bool {
	res, _ := br.get("/ui/models")
	return res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/ui/login")
}

// The session cookie holds a random session id, never the token; signing
// out ends the session on the server, so a copy of the cookie is worth
// nothing afterwards.
func TestSessionNotTheToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.signedIn(t, readToken)
	c := br.sessionCookie()
	require.NotNil(t, c, "a session cookie")
	require.NotContains(t, c.Value, readToken)
	require.Len(t, c.Value, 43, "32 random bytes, base64url")
	require.NotEqual(t, c.Value, b.signedIn(t, readToken).sessionCookie().Value, "each sign-in has its own session")

	stolen := b.as(t, c)
	require.False(t, stolen.signedOut(), "the cookie stands for the session")
	res, _ := br.post("/ui/logout", url.Values{"csrf": {br.csrf("/ui/models")}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, br.signedOut())
	require.True(t, stolen.signedOut(), "a copy of the cookie ends with the session")

	// A new sign-in in the same browser ends the session before it.
	before := b.signedIn(t, readToken)
	first := before.sessionCookie()
	csrf := before.csrf("/ui/login")
	res, _ = before.post("/ui/login", url.Values{"csrf": {csrf}, "token": {writeToken}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.NotEqual(t, first.Value, before.sessionCookie().Value)
	require.True(t, b.as(t, first).signedOut(), "the first session ended with the second sign-in")
	require.False(t, before.signedOut())

	// A made-up session id, or the token itself in the cookie, is no session.
	for _, v := range []string{readToken, strings.Repeat("A", 43), "", "x"} {
		require.True(t, b.as(t, &http.Cookie{Name: "freshen_session", Value: v}).signedOut(), "cookie %q", v)
	}
}

// A session lasts its time to live after the sign-in, however it is used.
func TestSessionExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, ui.WithSessionTTL(time.Hour))
	br := b.signedIn(t, readToken)
	b.clock.Advance(59 * time.Minute)
	require.False(t, br.signedOut())
	b.clock.Advance(time.Minute)
	require.True(t, br.signedOut(), "expired after an hour")
}

// newInstance returns one dashboard over a shared session store, with
// its own tokens, as an instance of serve has.
func newInstance(t *testing.T, svc *refresh.Service, sessions ui.SessionStore, tokens ...refreshhttp.Token) *bundle {
	t.Helper()
	auth, err := refreshhttp.NewAuth(tokens, nil)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.New(svc, ui.WithAuth(auth), ui.WithSessions(sessions)))
	b := &bundle{svc: svc, server: httptest.NewServer(mux)}
	t.Cleanup(b.server.Close)
	return b
}

var (
	readerEntry = refreshhttp.Token{Name: "reader", Hash: refreshhttp.HashToken(readToken), Scopes: []refreshhttp.Scope{"read"}}
	writerEntry = refreshhttp.Token{Name: "writer", Hash: refreshhttp.HashToken(writeToken), Scopes: []refreshhttp.Scope{"write"}}
)

// A token removed from the configuration ends its sessions at their next
// request: on an instance that no longer knows the token, which deletes
// the session, and so on every other instance too, even one that still
// has the token (it restarts later).
func TestSessionEndsWithItsToken(t *testing.T) {
	t.Parallel()
	clock := refresh.NewVirtualClock(now)
	svc := &refresh.Service{Store: memory.NewStore(), Clock: clock}
	sessions := memory.NewSessions()
	old := newInstance(t, svc, sessions, readerEntry, writerEntry)
	updated := newInstance(t, svc, sessions, writerEntry) // the reader's token is removed

	reader := old.signedIn(t, readToken)
	writer := old.signedIn(t, writeToken)
	require.False(t, reader.signedOut())
	onUpdated := updated.as(t, reader.sessionCookie())
	require.True(t, onUpdated.signedOut(), "the instance without the token refuses the session")
	require.True(t, reader.signedOut(), "and ended it for every instance")
	require.False(t, updated.as(t, writer.sessionCookie()).signedOut(), "the other token's sessions go on")
	require.False(t, writer.signedOut())
}

// The session cookie is Secure whenever the sign-in came over TLS, to the
// server or to a proxy that says so (X-Forwarded-Proto: https), and
// HttpOnly, SameSite=Strict, under the base path always.
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for proto, secure := range map[string]bool{"": false, "https": true, "HTTPS": true, "http": false} {
		br := b.browser(t)
		csrf := br.csrf("/ui/login")
		req, err := http.NewRequest(http.MethodPost, b.server.URL+"/ui/login",
			strings.NewReader(url.Values{"csrf": {csrf}, "token": {readToken}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		res, _ := br.do(req)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		var c *http.Cookie
		for _, rc := range res.Cookies() {
			if rc.Name == "freshen_session" {
				c = rc
			}
		}
		require.NotNil(t, c, proto)
		require.Equal(t, secure, c.Secure, "X-Forwarded-Proto %q", proto)
		require.True(t, c.HttpOnly)
		require.Equal(t, http.SameSiteStrictMode, c.SameSite)
		require.Equal(t, "/ui/", c.Path)
	}

	tlsServer := httptest.NewTLSServer(b.server.Config.Handler)
	t.Cleanup(tlsServer.Close)
	br := b.browser(t)
	br.base = tlsServer.URL
	br.c.Transport = tlsServer.Client().Transport
	csrf := br.csrf("/ui/login")
	res, _ := br.post("/ui/login", url.Values{"csrf": {csrf}, "token": {readToken}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	secure := false
	for _, rc := range res.Cookies() {
		if rc.Name == "freshen_session" {
			secure = rc.Secure
		}
	}
	require.True(t, secure, "Secure over TLS")
}

// migratedSchema returns the pool configuration of a schema of the test's
// database, migrated, and dropped at the end of the test; it skips without
// DATABASE_URL (run under scripts/with-servers.sh).
func migratedSchema(t *testing.T) *pgxpool.Config {
	t.Helper()
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	name := make([]byte, 6)
	_, _ = rand.Read(name)
	schema := "test_" + hex.EncodeToString(name)
	exec := func(sql string) {
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { exec("DROP SCHEMA " + schema + " CASCADE") })
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	require.NoError(t, err)
	err = migrations.Migrate(ctx, conn)
	conn.Close(ctx)
	require.NoError(t, err)
	return cfg
}

// pgSessions returns two stores on one migrated schema, as two instances
// of serve have, and a pool of a third connection to look at the tables.
func pgSessions(t *testing.T) (*postgres.Store, *postgres.Store, *pgxpool.Pool) {
	t.Helper()
	cfg := migratedSchema(t)
	pool := func() *pgxpool.Pool {
		p, err := pgxpool.NewWithConfig(context.Background(), cfg)
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	a, b := pool(), pool()
	return postgres.New(a), postgres.New(b), a
}

// Two instances on one database share their sessions: a session opened on
// one serves on the other, a sign-out on one ends it on the other, and an
// expired session is refused and deleted when another one opens.
func TestSessionPostgresTwoInstances(t *testing.T) {
	t.Parallel()
	storeA, storeB, pool := pgSessions(t)
	clock := refresh.NewVirtualClock(now)
	a := newInstance(t, &refresh.Service{Store: storeA, Clock: clock}, storeA, readerEntry, writerEntry)
	b := newInstance(t, &refresh.Service{Store: storeB, Clock: clock}, storeB, readerEntry, writerEntry)

	onA := a.signedIn(t, readToken)
	onB := b.as(t, onA.sessionCookie())
	require.False(t, onB.signedOut(), "B knows the session A opened")
	var stored string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT id_hash || ' ' || token_hash || ' ' || token_name FROM dashboard_sessions`).Scan(&stored))
	require.NotContains(t, stored, onA.sessionCookie().Value, "the table holds the id's hash, not the id")
	require.NotContains(t, stored, readToken)
	require.Contains(t, stored, refreshhttp.HashToken(readToken)+" reader")

	res, _ := onB.post("/ui/logout", url.Values{"csrf": {onB.csrf("/ui/models")}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, onA.signedOut(), "signed out on B, the session has ended on A")

	// Expiry: refused at once, deleted with the next sign-in.
	old := a.signedIn(t, writeToken)
	clock.Advance(ui.DefaultSessionTTL)
	require.True(t, b.as(t, old.sessionCookie()).signedOut(), "expired")
	count := func() (n int) {
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM dashboard_sessions`).Scan(&n))
		return n
	}
	require.Equal(t, 1, count())
	fresh := b.signedIn(t, writeToken)
	require.Equal(t, 1, count(), "the expired session was deleted, the new one kept")
	require.False(t, a.as(t, fresh.sessionCookie()).signedOut())

	// The writer's token is removed from an instance that restarted (c):
	// its next request there ends the session on every instance.
	c := newInstance(t, &refresh.Service{Store: storeB, Clock: clock}, storeB, readerEntry)
	require.True(t, c.as(t, fresh.sessionCookie()).signedOut())
	require.True(t, a.as(t, fresh.sessionCookie()).signedOut(), "ended on a, which still knows the token")
	require.Zero(t, count(), "the session was deleted")
}

// Every SessionStore keeps a session until it expires (at ExpiresAt
// exactly) or is deleted, and answers ENOTFOUND for the rest.
func TestSessionStores(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) ui.SessionStore{
		"memory":   func(*testing.T) ui.SessionStore { return memory.NewSessions() },
		"postgres": func(t *testing.T) ui.SessionStore { s, _, _ := pgSessions(t); return s },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			sess := refresh.Session{Hash: "h1", TokenHash: refreshhttp.HashToken(readToken), TokenName: "reader",
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			require.NoError(t, s.CreateSession(ctx, sess, now))
			got, err := s.Session(ctx, "h1", now.Add(59*time.Minute))
			require.NoError(t, err)
			require.Equal(t, sess.TokenHash, got.TokenHash)
			require.Equal(t, "reader", got.TokenName)
			require.True(t, sess.ExpiresAt.Equal(got.ExpiresAt))
			_, err = s.Session(ctx, "h1", now.Add(time.Hour))
			require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "expired at ExpiresAt")
			_, err = s.Session(ctx, "h2", now)
			require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "unknown")

			sess2 := sess
			sess2.Hash = "h2"
			require.NoError(t, s.CreateSession(ctx, sess2, now))
			require.NoError(t, s.DeleteSession(ctx, "h2"))
			_, err = s.Session(ctx, "h2", now)
			require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "deleted")
			require.NoError(t, s.DeleteSession(ctx, "h2"), "deleting none is no error")
			_, err = s.Session(ctx, "h1", now)
			require.NoError(t, err, "the other session stays")
		})
	}
}
