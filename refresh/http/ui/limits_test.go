package ui_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// putLimit sets l in the store.
func (b *bundle) putLimit(t *testing.T, l refresh.Limit) {
	t.Helper()
	_, err := b.store.PutLimit(context.Background(), l, false)
	require.NoError(t, err)
}

func (b *bundle) limits(t *testing.T) []refresh.Limit {
	t.Helper()
	limits, err := b.store.Limits(context.Background())
	require.NoError(t, err)
	return limits
}

var limitRow = regexp.MustCompile(`(?s)<tr>\s*<td>([^<]*)</td>\s*<td><code>([^<]*)</code></td>(.*?)</tr>`)
var cellText = regexp.MustCompile(`<td class="num">(?:<span class="muted">)?([^<]*)`)

// limitRows returns the rows of the limits table: kind, key, max_running,
// max_starts, per, burst, "–" for those unset.
func limitRows(body string) [][]string {
	var rows [][]string
	for _, m := range limitRow.FindAllStringSubmatch(body, -1) {
		row := []string{html.UnescapeString(m[1]), html.UnescapeString(m[2])}
		for _, c := range cellText.FindAllStringSubmatch(m[3], -1) {
			row = append(row, c[1])
		}
		rows = append(rows, row)
	}
	return rows
}

// The limits page lists every limit as GET /limits does, by kind then key;
// a reader sees it without the form or the buttons, which need admin.
func TestLimitsList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5})
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(time.Minute), Burst: 2})
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 3, MaxStarts: 100, Per: refresh.Duration(time.Hour)})
	want := [][]string{
		{"prefix", "acme-", "3", "100", "1h", "–"},
		{"queue", "exports", "5", "–", "–", "–"},
		{"rate_key", "api.example.com", "–", "10", "1m", "2"},
	}

	admin := b.signedIn(t, adminToken)
	res, body := admin.get("/ui/limits")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, want, limitRows(body))
	contains(t, body, `href="/ui/limits" aria-current="page"`)
	contains(t, body, `name="do" value="set"`)
	require.Equal(t, 3, strings.Count(body, `name="do" value="delete"`), "a delete button per limit")

	for _, token := range []string{readToken, writeToken} {
		br := b.signedIn(t, token)
		res, body := br.get("/ui/limits")
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		require.Equal(t, want, limitRows(body), "GET /limits needs scope read")
		lacks(t, body, `name="do"`, "setting and deleting need admin")
		contains(t, body, "needs a token with scope admin")
	}

	empty := setup(t).signedIn(t, adminToken)
	_, body = empty.get("/ui/limits")
	contains(t, body, "No limits are set")
}

// The form sets a limit through the store as PUT /limits does: a limit of
// the same kind and key is replaced whole, a field left empty is unset.
func TestLimitsSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.signedIn(t, adminToken)
	set := func(kind, key, running, starts, per, burst string) {
		t.Helper()
		res, body := admin.post("/ui/limits", url.Values{"csrf": {admin.csrf("/ui/limits")}, "do": {"set"}, "kind": {kind}, "key": {key},
			"max_running": {running}, "max_starts": {starts}, "per": {per}, "burst": {burst}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
		require.Equal(t, "/ui/limits", res.Header.Get("Location"))
	}
	set("rate_key", "api.example.com", "", " 10 ", "PT1M", "2")
	want := refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(time.Minute), Burst: 2}
	require.Equal(t, []refresh.Limit{want}, b.limits(t))
	_, body := admin.get("/ui/limits")
	contains(t, body, `<div class="flash ok" role="status">Set `+html.EscapeString(want.String())+`.</div>`)

	set("rate_key", "api.example.com", "4", "", "", "")
	require.Equal(t, []refresh.Limit{{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxRunning: 4}}, b.limits(t),
		"replaced whole: max_starts, per and burst left empty are unset")
}

// Each refusal of the form names the field and says the rule, the very
// field and rule the API's PUT /limits/{kind}/{key} answers for the same
// limit; nothing is written.
func TestLimitsSetRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	api := httptest.NewServer(refreshhttp.NewServer(b.svc))
	t.Cleanup(api.Close)
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5})
	admin := b.signedIn(t, adminToken)

	long := strings.Repeat("h", refresh.MaxRateKeyBytes+1)
	for _, tc := range []struct {
		kind, key, running, starts, per, burst string
		body                                   string // the same limit as the API's body
		fields                                 []string
	}{
		{"queue", "exports", "0", "", "", "", `{"max_running": 0}`, []string{"max_running"}},
		{"queue", "exports", "five", "", "", "", `{"max_running": "five"}`, []string{"max_running"}},
		{"queue", "exports", "", "", "", "", `{}`, []string{"max_running"}},
		{"queue", "exports", "", "10", "", "", `{"max_starts": 10}`, []string{"per"}},
		{"queue", "exports", "", "10", "500ms", "", `{"max_starts": 10, "per": "500ms"}`, []string{"per"}},
		{"queue", "exports", "", "10", "soon", "", `{"max_starts": 10, "per": "soon"}`, []string{"per"}},
		{"queue", "exports", "", "10", "1m", "20000", `{"max_starts": 10, "per": "1m", "burst": 20000}`, []string{"burst"}},
		{"queue", "exports", "", "10", "1m", "0", `{"max_starts": 10, "per": "1m", "burst": 0}`, []string{"burst"}},
		{"queue", "exports", "2", "", "1m", "", `{"max_running": 2, "per": "1m"}`, []string{"max_starts"}},
		{"queue", "exports", "-1", "-2", "", "", `{"max_running": -1, "max_starts": -2}`, []string{"max_running", "max_starts"}},
		{"bogus", "exports", "1", "", "", "", `{"max_running": 1}`, []string{"kind"}},
		{"rate_key", long, "1", "", "", "", `{"max_running": 1}`, []string{"key"}},
		{"rate_key", "a\x01b", "1", "", "", "", `{"max_running": 1}`, []string{"key"}},
		{"prefix", "acme/", "1", "", "", "", `{"max_running": 1}`, []string{"key"}},
	} {
		what := tc.kind + " " + tc.body
		res, body := admin.post("/ui/limits", url.Values{"csrf": {admin.csrf("/ui/limits")}, "do": {"set"}, "kind": {tc.kind}, "key": {tc.key},
			"max_running": {tc.running}, "max_starts": {tc.starts}, "per": {tc.per}, "burst": {tc.burst}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode, what)
		var page []string
		for _, field := range tc.fields {
			require.Regexp(t, `name="`+field+`"[^>]*aria-invalid="true"`, body, "%s: the field %s is marked", what, field)
		}
		require.Equal(t, len(tc.fields), strings.Count(body, `aria-invalid="true"`), "%s: only %v are marked", what, tc.fields)
		for _, m := range fieldError.FindAllStringSubmatch(body, -1) {
			page = append(page, html.UnescapeString(m[1]))
		}
		contains(t, body, `value="`+html.EscapeString(tc.running)+`"`, "%s: the form keeps what was typed", what)

		req, err := http.NewRequest(http.MethodPut, api.URL+"/limits/"+url.PathEscape(tc.kind)+"/"+url.PathEscape(tc.key), strings.NewReader(tc.body))
		require.NoError(t, err)
		apiRes, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, err := io.ReadAll(apiRes.Body)
		require.NoError(t, err)
		apiRes.Body.Close()
		require.Equal(t, http.StatusBadRequest, apiRes.StatusCode, "%s: %s", what, data)
		var refusal struct{ Fields []refresh.FieldError }
		require.NoError(t, json.Unmarshal(data, &refusal))
		var fields, rules []string
		for _, f := range refusal.Fields {
			fields, rules = append(fields, f.Field), append(rules, f.Rule)
		}
		slices.Sort(fields)
		require.Equal(t, tc.fields, fields, "%s: the API refuses the same fields", what)
		slices.Sort(rules)
		slices.Sort(page)
		require.Equal(t, rules, page, "%s: the page says the API's rules", what)
	}
	require.Equal(t, []refresh.Limit{{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5}}, b.limits(t), "nothing was written")
}

var fieldError = regexp.MustCompile(`<p class="field-error">([^<]*)</p>`)

// A delete button removes its limit; a limit deleted meanwhile is said to
// be gone.
func TestLimitsDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5})
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 1, Per: refresh.Duration(time.Hour)})
	admin := b.signedIn(t, adminToken)
	csrf := admin.csrf("/ui/limits")
	del := url.Values{"csrf": {csrf}, "do": {"delete"}, "kind": {"rate_key"}, "key": {"api.example.com"}}
	res, body := admin.post("/ui/limits", del)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	require.Equal(t, []refresh.Limit{{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5}}, b.limits(t))
	_, body = admin.get("/ui/limits")
	contains(t, body, `<div class="flash ok" role="status">Deleted the limit rate_key:api.example.com;`)

	res, _ = admin.post("/ui/limits", del)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, body = admin.get("/ui/limits")
	contains(t, body, `<div class="flash info" role="status">Nothing was deleted: there is no limit rate_key:api.example.com`)

	res, _ = admin.post("/ui/limits", url.Values{"csrf": {csrf}, "do": {"drop"}, "kind": {"queue"}, "key": {"exports"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, body = admin.get("/ui/limits")
	contains(t, body, `Nothing was done: do: must be set or delete, got &#34;drop&#34;.`)
	require.Len(t, b.limits(t), 1)
}

// A write needs the page's CSRF token and scope admin without a prefix,
// as PUT and DELETE /limits need admin; a token limited to a prefix
// cannot even see the limits, as GET /limits refuses it, and has no link
// to them.
func TestLimitsRefusedWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5})
	admin := b.signedIn(t, adminToken)
	for _, form := range []url.Values{
		{"do": {"delete"}, "kind": {"queue"}, "key": {"exports"}},
		{"csrf": {"forged"}, "do": {"delete"}, "kind": {"queue"}, "key": {"exports"}},
		{"do": {"set"}, "kind": {"queue"}, "key": {"exports"}, "max_running": {"1"}},
	} {
		res, body := admin.post("/ui/limits", form)
		require.Equal(t, http.StatusForbidden, res.StatusCode, body)
		contains(t, body, "CSRF token")
	}
	for _, token := range []string{readToken, writeToken} {
		br := b.signedIn(t, token)
		res, body := br.post("/ui/limits", url.Values{"csrf": {br.csrf("/ui/limits")}, "do": {"delete"}, "kind": {"queue"}, "key": {"exports"}})
		require.Equal(t, http.StatusForbidden, res.StatusCode, body)
		contains(t, body, "this needs scope admin")
	}

	acme := b.signedIn(t, acmeToken)
	res, body := acme.get("/ui/limits")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	contains(t, body, "needs a token without a prefix")
	lacks(t, body, "exports")
	_, body = acme.get("/ui/")
	lacks(t, body, `/ui/limits"`, "no link to a page the token cannot open")
	res, _ = acme.post("/ui/limits", url.Values{"csrf": {acme.csrf("/ui/models")}, "do": {"delete"}, "kind": {"queue"}, "key": {"exports"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, []refresh.Limit{{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5}}, b.limits(t), "nothing was deleted")
}
