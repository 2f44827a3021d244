package ui_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/http/ui"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// Tokens of the tests, by scope.
const (
	readToken  = "secret-read"
	writeToken = "secret-write"
	adminToken = "secret-admin"
	acmeToken  = "secret-acme" // write, limited to acme-
)

var now = time.Date(2026, 3, 2, 14, 30, 0, 0, time.UTC)

// bundle is a dashboard over an in-memory store, behind tokens.
type bundle struct {
	store  *memory.Store
	clock  *refresh.VirtualClock
	svc    *refresh.Service
	server *httptest.Server
}

func setup(t *testing.T, opts ...ui.Option) *bundle {
	t.Helper()
	b := &bundle{store: memory.NewStore(), clock: refresh.NewVirtualClock(now)}
	b.svc = &refresh.Service{Store: b.store, Clock: b.clock}
	auth, err := refreshhttp.NewAuth([]refreshhttp.Token{
		{Name: "reader", Hash: refreshhttp.HashToken(readToken), Scopes: []refreshhttp.Scope{"read"}},
		{Name: "writer", Hash: refreshhttp.HashToken(writeToken), Scopes: []refreshhttp.Scope{"write"}},
		{Name: "ops", Hash: refreshhttp.HashToken(adminToken), Scopes: []refreshhttp.Scope{"admin"}},
		{Name: "acme", Hash: refreshhttp.HashToken(acmeToken), Scopes: []refreshhttp.Scope{"write"}, Prefix: "acme-"},
	}, nil)
	require.NoError(t, err)
	h := ui.New(b.svc, append([]ui.Option{ui.WithAuth(auth)}, opts...)...)
	mux := http.NewServeMux()
	mux.Handle("/ui/", h)
	b.server = httptest.NewServer(mux)
	t.Cleanup(b.server.Close)
	return b
}

// put creates a model.
func (b *bundle) put(t *testing.T, id, policy string) {
	t.Helper()
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: id, Policy: []byte(policy)})
	require.NoError(t, err)
}

// disable gives model id the state of a model a final failure disabled.
func (b *bundle) disable(t *testing.T, id, kind, message, reason string) {
	t.Helper()
	err := b.store.Modify(context.Background(), []string{id}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.RefreshAt = time.Time{}
		m.ConsecutiveFailures, m.FailingSince = 1, now.Add(-time.Hour)
		m.LastError = &refresh.LastError{Kind: kind, Message: message, At: now.Add(-time.Hour)}
		m.DisabledAt, m.DisabledReason = now.Add(-time.Hour), reason
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	})
	require.NoError(t, err)
}

func (b *bundle) get(t *testing.T, id string) refresh.Model {
	t.Helper()
	m, err := b.store.Get(context.Background(), id)
	require.NoError(t, err)
	return m
}

// browser is an HTTP client with cookies that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (b *bundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: b.server.URL, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signedIn returns a browser signed in with token.
func (b *bundle) signedIn(t *testing.T, token string) *browser {
	br := b.browser(t)
	csrf := br.csrf("/ui/login")
	res, _ := br.post("/ui/login", url.Values{"csrf": {csrf}, "token": {token}, "next": {"/ui/models"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/ui/models", res.Header.Get("Location"))
	return br
}

func (br *browser) do(req *http.Request) (*http.Response, string) {
	br.t.Helper()
	res, err := br.c.Do(req)
	require.NoError(br.t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(br.t, err)
	return res, string(body)
}

func (br *browser) get(path string) (*http.Response, string) {
	req, err := http.NewRequest(http.MethodGet, br.base+path, nil)
	require.NoError(br.t, err)
	return br.do(req)
}

func (br *browser) post(path string, form url.Values) (*http.Response, string) {
	req, err := http.NewRequest(http.MethodPost, br.base+path, strings.NewReader(form.Encode()))
	require.NoError(br.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return br.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the page at path.
func (br *browser) csrf(path string) string {
	br.t.Helper()
	res, body := br.get(path)
	require.Equal(br.t, http.StatusOK, res.StatusCode, body)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(br.t, m, "no csrf field on %s", path)
	return html.UnescapeString(m[1])
}

// hourly retries 0s, 1m, 5m, 15m, 30m after ten-minute-bounded attempts:
// from a 15:00 UTC run whose attempts fail after a minute, the fifth
// failure (15:26) would retry at 15:56 and could run past 16:00, so the
// retry is the 16:00 UTC run, 17:00 in Paris (retry_aligned).
const hourly = `{"schedule": "FREQ=HOURLY", "timezone": "Europe/Paris", "timeout": "10m", "retry": {"delays": ["0s", "1m", "5m", "15m", "30m"]}}`

// contains fails the test unless body contains s, without printing the
// whole page.
func contains(t *testing.T, body, s string, msgAndArgs ...any) {
	t.Helper()
	if !strings.Contains(body, s) {
		require.Fail(t, fmt.Sprintf("the page does not contain %q", s), msgAndArgs...)
	}
}

// lacks fails the test if body contains s.
func lacks(t *testing.T, body, s string, msgAndArgs ...any) {
	t.Helper()
	if strings.Contains(body, s) {
		require.Fail(t, fmt.Sprintf("the page contains %q", s), msgAndArgs...)
	}
}

const scheduled = `{"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris", "timeout": "1h"}`

func TestSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)

	res, _ := br.get("/ui/models?state=disabled")
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "a page without a session sends to the login")
	require.Equal(t, "/ui/login?next="+url.QueryEscape("/ui/models?state=disabled"), res.Header.Get("Location"))

	csrf := br.csrf("/ui/login")
	for _, tc := range []struct {
		token, rule string
	}{
		{"", "token: is required"},
		{"nope", "is not a token this server knows"},
		{strings.Repeat("x", 600), "must be at most 512 characters"},
	} {
		res, body := br.post("/ui/login", url.Values{"csrf": {csrf}, "token": {tc.token}})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		contains(t, body, strings.TrimPrefix(tc.rule, "token: "))
		contains(t, body, `aria-invalid="true"`)
	}
	res, _ = br.post("/ui/login", url.Values{"csrf": {"forged"}, "token": {readToken}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a sign-in needs the form's CSRF token")

	// next is followed within the dashboard only.
	for next, want := range map[string]string{
		"/ui/models?state=disabled": "/ui/models?state=disabled",
		"https://evil.example/ui/":  "/ui/",
		"//evil.example/ui/":        "/ui/",
		"/elsewhere":                "/ui/",
		"/ui/login":                 "/ui/",
	} {
		res, _ = br.post("/ui/login", url.Values{"csrf": {csrf}, "token": {readToken}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, want, res.Header.Get("Location"), "next %q", next)
	}
	var session *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "freshen_session" {
			session = c
		}
	}
	require.NotNil(t, session)
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, session.SameSite)
	require.Equal(t, "/ui/", session.Path)

	res, body := br.get("/ui/")
	require.Equal(t, http.StatusOK, res.StatusCode)
	contains(t, body, "reader")

	// Signing out forgets the token.
	res, _ = br.post("/ui/logout", url.Values{"csrf": {br.csrf("/ui/")}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	res, _ = br.get("/ui/")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
}

func TestBearerHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req, err := http.NewRequest(http.MethodGet, b.server.URL+"/ui/models", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+readToken)
	res, body := b.browser(t).do(req)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
}

func TestActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", scheduled)
	writer := b.signedIn(t, writeToken)
	reader := b.signedIn(t, readToken)

	// A reader with a valid CSRF token may not act.
	res, body := reader.post("/ui/models/m1/trigger", url.Values{"csrf": {reader.csrf("/ui/models/m1")}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	contains(t, body, "has scope read; this needs scope write")
	require.True(t, b.get(t, "m1").RefreshAt.After(now), "nothing triggered")

	// A writer without the CSRF token, or with another session's, may not act.
	for name, csrf := range map[string]string{"missing": "", "forged": "x", "another session's": reader.csrf("/ui/models/m1")} {
		res, body := writer.post("/ui/models/m1/trigger", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusForbidden, res.StatusCode, name)
		contains(t, body, "CSRF token does not match", name)
		require.True(t, b.get(t, "m1").RefreshAt.After(now), "nothing triggered (%s)", name)
	}
	// Nor may a request another site sent, CSRF token or not.
	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/ui/models/m1/trigger",
		strings.NewReader(url.Values{"csrf": {writer.csrf("/ui/models/m1")}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, _ = writer.do(req)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// With both, the action applies and the page says what it did.
	res, _ = writer.post("/ui/models/m1/trigger", url.Values{"csrf": {writer.csrf("/ui/models/m1")}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/ui/models/m1", res.Header.Get("Location"))
	require.Equal(t, now, b.get(t, "m1").RefreshAt, "triggered: due now")
	_, body = writer.get("/ui/models/m1")
	contains(t, body, "Triggered m1: refresh requested.")
	_, body = writer.get("/ui/models/m1")
	lacks(t, body, "Triggered m1", "the message shows once")

	res, _ = writer.post("/ui/models/m1/pause", url.Values{"csrf": {writer.csrf("/ui/models/m1")}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, b.get(t, "m1").Paused)
	writer.post("/ui/models/m1/pause", url.Values{"csrf": {writer.csrf("/ui/models/m1")}})
	_, body = writer.get("/ui/models/m1")
	contains(t, body, "Nothing changed: already paused")

	// The model's audit names the token of each action that changed
	// something, as the API's writes do; the no-op pause is not there.
	audit, err := b.store.Audit(context.Background(), "m1", 0, 10)
	require.NoError(t, err)
	var got []string
	for _, e := range audit {
		got = append(got, e.Actor+" "+e.Action)
	}
	require.Equal(t, []string{"writer pause", "writer trigger"}, got, "newest first")

	res, _ = writer.post("/ui/models/m1/explode", url.Values{"csrf": {writer.csrf("/ui/models/m1")}})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = writer.post("/ui/models/nope/trigger", url.Values{"csrf": {writer.csrf("/ui/models/m1")}})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestEscaping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"timeout": "10m", "disabled_message": "<b>bold</b> {error}"}`)
	script := `<script>alert("x")</script>`
	b.disable(t, "m1", "<img src=x onerror=alert(1)>", script, "Refresh disabled: "+script)
	br := b.signedIn(t, readToken)
	for _, path := range []string{"/ui/models/m1", "/ui/models?state=disabled", "/ui/"} {
		res, body := br.get(path)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		lacks(t, body, "<script>alert", path)
		lacks(t, body, "<img src=x", path)
	}
	_, body := br.get("/ui/models/m1")
	contains(t, body, "Refresh disabled: &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	lacks(t, body, "<b>bold")
	require.Contains(t, b.get(t, "m1").DisabledReason, script, "stored as given")

	res, _ := br.get("/ui/models/m1")
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'")

	// Text from the URL is escaped too: an id that breaks the id rule, a
	// path no page has, a prefix searched for.
	for _, tc := range []struct {
		path   string
		status int
		echoed bool // the page repeats what was sent
	}{
		{"/ui/models/%3Cscript%3Ealert(1)%3C%2Fscript%3E", http.StatusBadRequest, false},
		{"/ui/%3Cscript%3Ealert(1)%3C/script%3E", http.StatusNotFound, true},
		{"/ui/models?prefix=%3Cscript%3E", http.StatusBadRequest, true},
		{"/ui/models?%3Cscript%3E=1", http.StatusBadRequest, true},
	} {
		res, body := br.get(tc.path)
		require.Equal(t, tc.status, res.StatusCode, tc.path)
		lacks(t, body, "<script>alert", tc.path)
		lacks(t, body, "<script>=", tc.path)
		if tc.echoed {
			contains(t, body, "&lt;script&gt;", tc.path)
		}
	}
}

func TestModelsListFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"acme-1", "acme-2", "acme-3", "globex-1"} {
		b.put(t, id, `{}`)
	}
	b.disable(t, "acme-2", "validation", "bad input", "disabled for a reason")
	br := b.signedIn(t, readToken)

	for _, tc := range []struct {
		query, field, rule string
	}{
		{"queue=a:b", "queue", refresh.QueueRule},
		{"prefix=-x", "prefix", "must be the start of a model id"},
		{"state=sleeping", "state", `must be running, failing, disabled or paused, got &#34;sleeping&#34;`},
		{"limit=0", "limit", "must be an integer between 1 and 1000"},
		{"after=a%2Fb", "after", "must be a model id"},
		{"sort=id", "form", "sort: unknown parameter"},
	} {
		res, body := br.get("/ui/models?" + tc.query)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, tc.query)
		contains(t, body, tc.rule, tc.query)
	}
	_, body := br.get("/ui/models?prefix=acme-&limit=2")
	contains(t, body, ">acme-1<")
	contains(t, body, ">acme-2<")
	lacks(t, body, ">acme-3<")
	contains(t, body, "after=acme-2", "a link to the next page")
	_, body = br.get("/ui/models?prefix=acme-&limit=2&after=acme-2")
	contains(t, body, ">acme-3<")
	lacks(t, body, ">globex-1<")
	_, body = br.get("/ui/models?state=disabled")
	contains(t, body, ">acme-2<")
	lacks(t, body, ">acme-1<")
}

func TestPrefixToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "acme-1", `{}`)
	b.put(t, "globex-1", `{}`)
	br := b.signedIn(t, acmeToken)
	_, body := br.get("/ui/models")
	contains(t, body, ">acme-1<")
	lacks(t, body, "globex-1")
	_, body = br.get("/ui/")
	lacks(t, body, "globex-1")
	require.Regexp(t, `<span class="n">1</span><span class="l">models</span>`, body)
	res, _ := br.get("/ui/models/globex-1")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = br.post("/ui/models/globex-1/trigger", url.Values{"csrf": {br.csrf("/ui/models")}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = br.get("/ui/dead")
	require.Equal(t, http.StatusForbidden, res.StatusCode, "dead letters concern every customer")
}

func TestModelPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "bigtable-1", scheduled)
	b.put(t, "hourly-1", hourly)
	br := b.signedIn(t, readToken)
	res, body := br.get("/ui/models/bigtable-1")
	require.Equal(t, http.StatusOK, res.StatusCode)
	// 14:30 UTC is 15:30 in Paris: the next runs are 16:00 and 06:00, Paris time.
	contains(t, body, "Mon 2 Mar 2026, 16:00 CET")
	contains(t, body, "2026-03-02T15:00:00Z")
	contains(t, body, "Tue 3 Mar 2026, 06:00 CET")
	contains(t, body, "2026-03-03T05:00:00Z")
	contains(t, body, "If every attempt fails")
	contains(t, body, "If the next attempt succeeds")
	contains(t, body, "<svg")
	lacks(t, body, "Trigger now", "a reader sees no buttons")

	_, body = br.get("/ui/models/hourly-1")
	contains(t, body, "aligned: 17:00")
	contains(t, body, "Disabled Mon 2 Mar 2026, 17:01 CET after 6 failed attempts (5 retries, 1 aligned with the schedule)")

	writer := b.signedIn(t, writeToken)
	_, body = writer.get("/ui/models/hourly-1")
	contains(t, body, "Trigger now")
	contains(t, body, "Pause")
	lacks(t, body, ">Enable<", "enable only shows on a disabled model")
}

func TestPreview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.signedIn(t, readToken)
	csrf := br.csrf("/ui/preview")
	form := url.Values{"csrf": {csrf}, "policy": {hourly}, "attempts": {"5x failure http_503 after 1m: upstream 503"},
		"then": {"success after 5m"}, "start": {"2026-03-02T14:30:00Z"}, "span": {"P2D"}, "id": {"preview"}}
	res, body := br.post("/ui/preview", form)
	require.Equal(t, http.StatusOK, res.StatusCode)
	contains(t, body, "Simulated timeline")
	contains(t, body, "aligned: 17:00", "a retry whose attempt could pass the next run waits for it")
	contains(t, body, "retry_aligned")
	contains(t, body, "Succeeds Mon 2 Mar 2026, 17:05 CET after 5 failures")

	for _, tc := range []struct {
		field, value, rule string
	}{
		{"policy", `{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`, "policy.retry.backoff.multiplier: must be &gt;= 1, got 0.5"},
		{"policy", `{"timeout": `, "invalid JSON at byte"},
		{"policy", `{"schedule": "FREQ=DAILY;UNTIL=20200101T000000Z"}`, "policy.schedule: rule has no occurrence"},
		{"attempts", "failure after 2m\nexplode", "line 2: must start with success, failure or timeout"},
		{"attempts", "failure after two", "line 1: after: must be a duration"},
		{"then", "3x failure", "must be one attempt, without a count"},
		{"start", "yesterday", "must be an RFC 3339 time"},
		{"span", "-1h", "must be a duration &gt; 0"},
		{"id", "a b", refresh.IDRule},
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set(tc.field, tc.value)
		res, body := br.post("/ui/preview", f)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, tc.field+": "+tc.value)
		contains(t, body, tc.rule, tc.field+": "+tc.value)
		// The error stands beside its field.
		i := strings.Index(body, `name="`+tc.field+`"`)
		require.Positive(t, i, tc.field)
		require.Less(t, i, strings.Index(body, tc.rule), "%s: the error follows its field", tc.field)
	}
}

func TestPreviewPrefill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"timeout": "10m"}`)
	b.disable(t, "m1", "http_503", "upstream 503", "off")
	br := b.signedIn(t, readToken)
	_, body := br.get("/ui/preview?model=m1")
	contains(t, body, "failure http_503 after 1m")
	contains(t, body, `&#34;timeout&#34;: &#34;10m&#34;`)
	res, _ := br.get("/ui/preview?model=nope")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestOverviewBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, ui.WithScanLimit(3))
	for _, id := range []string{"a", "b", "c", "d"} {
		b.put(t, id, `{}`)
	}
	br := b.signedIn(t, readToken)
	_, body := br.get("/ui/")
	require.Regexp(t, `<span class="n">3\+</span><span class="l">models</span>`, body)
	contains(t, body, "Counted the first 3 models by id; there are more")
}

func TestStatic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	for _, path := range []string{"/ui/static/style.css", "/ui/static/app.js", "/ui/static/icon.svg"} {
		res, body := br.get(path)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.NotEmpty(t, body)
	}
	res, _ := br.get("/ui/static/nope.css")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

var tagField = regexp.MustCompile(`name="tag" value="([^"]*)"`)

func TestPreviewSave(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"timeout": "10m"}`)
	writer := b.signedIn(t, writeToken)
	_, body := writer.get("/ui/preview?model=m1")
	contains(t, body, "Save this policy to m1")
	tag := tagField.FindStringSubmatch(body)[1]
	require.Equal(t, refresh.DefinitionTag(b.get(t, "m1")), tag)
	form := url.Values{"csrf": {writer.csrf("/ui/preview")}, "model": {"m1"}, "tag": {tag}, "do": {"save"},
		"policy": {hourly}, "attempts": {"failure"}, "then": {"success"}, "start": {"2026-03-02T14:30:00Z"}, "span": {"P1D"}, "id": {"m1"}}

	reader := b.signedIn(t, readToken)
	rform := url.Values{}
	for k, v := range form {
		rform[k] = v
	}
	rform.Set("csrf", reader.csrf("/ui/preview"))
	res, _ := reader.post("/ui/preview", rform)
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a reader may simulate, not save")
	_, body = reader.get("/ui/preview?model=m1")
	lacks(t, body, "Save this policy")

	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("policy", `{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`)
	res, body = writer.post("/ui/preview", bad)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	contains(t, body, "policy.retry.backoff.multiplier: must be &gt;= 1, got 0.5")
	require.Equal(t, "10m0s", time.Duration(b.get(t, "m1").Policy.Timeout).String(), "nothing saved")

	res, _ = writer.post("/ui/preview", form)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/ui/models/m1", res.Header.Get("Location"))
	m := b.get(t, "m1")
	require.Equal(t, "FREQ=HOURLY", m.Policy.Schedule)
	_, body = writer.get("/ui/models/m1")
	contains(t, body, "Saved the policy of m1.")

	// The tag of the first save is stale now: a second save from the same
	// page is refused.
	form.Set("policy", `{"timeout": "20m"}`)
	res, body = writer.post("/ui/preview", form)
	require.Equal(t, http.StatusPreconditionFailed, res.StatusCode)
	contains(t, body, "m1 has changed since this preview was opened")
	require.Equal(t, "FREQ=HOURLY", b.get(t, "m1").Policy.Schedule)
}

// modify changes model id in the store as a transition would.
func (b *bundle) modify(t *testing.T, id string, change func(*refresh.Model)) {
	t.Helper()
	err := b.store.Modify(context.Background(), []string{id}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		change(&m)
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	})
	require.NoError(t, err)
}

// TestModelExtensions: a model waiting on its upstreams says what for, in
// the customer's words, lists each upstream with its status (a missing one
// unlinked), and an overdue, snoozed or slot-waiting model says so.
func TestModelExtensions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.put(t, "orders", `{"timeout": "10m"}`)
	b.put(t, "prices", `{"timeout": "10m"}`)
	script := `<script>alert("x")</script>`
	b.disable(t, "orders", "validation", "bad row", "Row 3 of your file has no date. "+script)
	b.modify(t, "prices", func(m *refresh.Model) {
		m.LastSuccessAt, m.LastChangedAt = now.Add(-10*time.Minute), now.Add(-10*time.Minute)
	})
	_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "report-1", Policy: []byte(`{"max_age": "1h"}`),
		Upstreams: []string{"orders", "prices", "ghost-1"}})
	require.NoError(t, err)
	br := b.signedIn(t, readToken)

	res, body := br.get("/ui/models/report-1")
	require.Equal(t, http.StatusOK, res.StatusCode)
	lacks(t, body, "<script>alert")
	contains(t, body, `<div class="banner waiting" role="status">`)
	contains(t, body, html.EscapeString(refresh.UpstreamWaiting(b.get(t, "report-1"), map[string]refresh.Upstream{
		"orders": refresh.UpstreamOf(b.get(t, "orders")), "prices": refresh.UpstreamOf(b.get(t, "prices"))})),
		"the sentence of the API")
	contains(t, body, "waiting for orders, whose refresh is disabled: Row 3 of your file has no date. &lt;script&gt;")
	contains(t, body, "; ghost-1, which does not exist")
	upstreams := regexp.MustCompile(`(?s)<tr class="up-(\w+)">\s*<td class="id">(.*?)</td>`).FindAllStringSubmatch(body, -1)
	require.Len(t, upstreams, 3, "a row per upstream")
	require.Equal(t, []string{"disabled", `<a href="/ui/models/orders">orders</a>`}, upstreams[0][1:])
	require.Equal(t, []string{"changed", `<a href="/ui/models/prices">prices</a>`}, upstreams[1][1:])
	require.Equal(t, []string{"missing", `<span class="missing-id">ghost-1</span>`}, upstreams[2][1:], "a missing upstream has no page to link to")
	contains(t, body, "Its refresh is disabled: Row 3 of your file has no date. &lt;script&gt;")
	contains(t, body, "No model has this id.")
	contains(t, body, "every one of these has changed since its last success (mode all)")
	contains(t, body, "fresh until Mon 2 Mar 2026, 15:30 UTC")
	lacks(t, body, "banner overdue")

	// A model without upstreams shows none of it.
	_, body = br.get("/ui/models/prices")
	lacks(t, body, "banner waiting")
	lacks(t, body, "Upstreams</h2>")
	lacks(t, body, "Freshness")

	// Overdue: an hour and a half after its creation, with no success.
	b.clock.Advance(90 * time.Minute)
	_, body = br.get("/ui/models/report-1")
	contains(t, body, "Overdue since Mon 2 Mar 2026, 15:30 UTC")
	contains(t, body, "it has not succeeded since it was created")
	_, body = br.get("/ui/models")
	row := func(id string) string {
		return regexp.MustCompile(`(?s)<td><a href="/ui/models/` + id + `">` + id + `</a></td>.*?</tr>`).FindString(body)
	}
	require.Contains(t, row("report-1"), `title="Older than its freshness promise (max_age) allows">overdue</span>`)
	require.NotEmpty(t, row("prices"))
	require.NotContains(t, row("prices"), "overdue", "prices has no freshness promise")

	// Snoozed and waiting for a slot.
	b.modify(t, "prices", func(m *refresh.Model) { m.SnoozedSince, m.RefreshAt = now, now.Add(2*time.Hour) })
	_, body = br.get("/ui/models/prices")
	require.Regexp(t, `<span class="badge paused" title="[^"]*">snoozed</span>`, body)
	contains(t, body, "<dt>Snoozed since</dt><dd>Mon 2 Mar 2026, 14:30 UTC")
	contains(t, body, "at Tue 3 Mar 2026, 14:30 UTC a snooze becomes a failure", "24h, the default max_snooze")
	b.modify(t, "prices", func(m *refresh.Model) { m.SnoozedSince, m.RefreshAt, m.WaitingForSlot = time.Time{}, now, true })
	_, body = br.get("/ui/models/prices")
	require.Regexp(t, `<span class="badge running" title="[^"]*">waiting for a slot</span>`, body)
	contains(t, body, "<dt>Waiting for a slot</dt>")
	b.modify(t, "prices", func(m *refresh.Model) { m.WaitingLimit = "prefix:pri" })
	_, body = br.get("/ui/models/prices")
	contains(t, body, `the concurrency limit of the prefix &#34;pri&#34; is full`)
}
