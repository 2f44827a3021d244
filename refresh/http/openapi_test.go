package http

// The OpenAPI document (openapi.json) is checked against the server: the
// routes it registers, the scopes they need, and real answers, whose
// status codes, media types, required headers and bodies must be those the
// document gives. A body is validated with a small JSON Schema checker
// (the keywords the document uses) that also refuses members the schema
// does not declare, so that a field added to an answer must be documented.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// servedBy marks the operations that freshen serve answers itself, not
// this package's Server (/readyz).
const servedBy = "x-served-by"

// openapiDoc is the parsed document.
type openapiDoc map[string]any

func loadOpenAPI(t *testing.T) openapiDoc {
	t.Helper()
	var doc openapiDoc
	dec := json.NewDecoder(bytes.NewReader(openAPI))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&doc), "openapi.json is not JSON")
	return doc
}

// operation is one method of one documented path.
type operation struct {
	method, path string
	op           map[string]any
}

func (o operation) String() string { return o.method + " " + o.path }

// methods are the operation keys of a path item.
var methods = []string{"get", "put", "post", "patch", "delete", "head", "options", "trace"}

// operations returns the document's operations, sorted.
func (d openapiDoc) operations() []operation {
	var ops []operation
	for path, item := range d["paths"].(map[string]any) {
		for _, m := range methods {
			if op, ok := item.(map[string]any)[m].(map[string]any); ok {
				ops = append(ops, operation{method: strings.ToUpper(m), path: path, op: op})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].String() < ops[j].String() })
	return ops
}

// resolve follows $ref (a local JSON pointer) until v is no reference.
func (d openapiDoc) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m, _ = d.pointer(ref).(map[string]any)
	}
	return m
}

// pointer returns the value at a local reference such as
// "#/components/schemas/Model", or nil.
func (d openapiDoc) pointer(ref string) any {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var v any = map[string]any(d)
	for _, tok := range strings.Split(path, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}

// find returns the operation that answers method and the concrete path p:
// the template whose segments match, the one with the most literal
// segments first (/dead/requeue before /dead/{id}).
func (d openapiDoc) find(method, p string) (operation, bool) {
	var best operation
	bestLiterals := -1
	got := strings.Split(p, "/")
	for _, o := range d.operations() {
		want := strings.Split(o.path, "/")
		if o.method != method || len(want) != len(got) {
			continue
		}
		literals := 0
		match := true
		for i := range want {
			switch {
			case strings.HasPrefix(want[i], "{"):
			case want[i] == got[i]:
				literals++
			default:
				match = false
			}
		}
		if match && literals > bestLiterals {
			best, bestLiterals = o, literals
		}
	}
	return best, bestLiterals >= 0
}

// scope returns the scope the operation's security asks for, "" for none
// (an open route).
func (d openapiDoc) scope(o operation) string {
	sec, ok := o.op["security"]
	if !ok {
		sec = d["security"]
	}
	for _, req := range sec.([]any) {
		for _, scopes := range req.(map[string]any) {
			for _, s := range scopes.([]any) {
				return s.(string)
			}
		}
	}
	return ""
}

func TestOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	require.Equal(t, "3.1.0", doc["openapi"])

	// Every reference resolves.
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				require.NotNil(t, doc.pointer(ref), "%s: $ref %s does not resolve", at, ref)
			}
			for k, e := range v {
				walk(at+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s/%d", at, i), e)
			}
		}
	}
	walk("#", map[string]any(doc))

	ids := map[string]string{}
	for _, o := range doc.operations() {
		id, _ := o.op["operationId"].(string)
		require.NotEmpty(t, id, "%s: no operationId", o)
		require.Empty(t, ids[id], "%s: operationId %s is also %s's", o, id, ids[id])
		ids[id] = o.String()
		require.NotEmpty(t, o.op["responses"], "%s: no responses", o)
		require.Contains(t, []string{"", string(ScopeRead), string(ScopeWrite), string(ScopeAdmin)}, doc.scope(o), "%s: unknown scope", o)
	}
}

// TestOpenAPIRoutes checks that the document lists exactly the routes the
// server registers, and the query parameters of GET /models.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	var documented, byServe []string
	for _, o := range doc.operations() {
		if o.op[servedBy] != nil {
			byServe = append(byServe, o.String())
			continue
		}
		documented = append(documented, o.String())
	}
	require.Equal(t, []string{"GET /readyz"}, byServe, "operations freshen serve answers itself")

	for _, withDead := range []bool{false, true} {
		var opts []Option
		if withDead {
			opts = append(opts, WithDeadLetters(&fakeDead{}))
		}
		s := NewServer(&refresh.Service{Store: memory.NewStore(), Clock: refresh.NewVirtualClock(openapiStart)}, opts...)
		registered := slices.Clone(s.routes)
		slices.Sort(registered)
		want := slices.DeleteFunc(slices.Clone(documented), func(r string) bool {
			return !withDead && strings.Contains(r, " /dead")
		})
		require.Equal(t, want, registered, "routes registered (dead letters: %v) and documented", withDead)
	}

	var params []string
	for _, p := range doc.resolve(doc.pointer("#/paths/~1models/get"))["parameters"].([]any) {
		params = append(params, doc.resolve(p)["name"].(string))
	}
	require.ElementsMatch(t, listParams, params, "query parameters of GET /models")
}

// TestOpenAPIScopes checks the scope each operation documents against the
// server: a token just below it is refused with 403 naming the scope (a
// request without a token, for read), and an open route answers without a
// token.
func TestOpenAPIScopes(t *testing.T) {
	doc := loadOpenAPI(t)
	f := setupOpenAPI(t)
	below := map[string]string{string(ScopeWrite): "read", string(ScopeAdmin): "write"}
	for _, o := range doc.operations() {
		if o.op[servedBy] != nil {
			continue
		}
		path := strings.NewReplacer("/dead/{id}", "/dead/0123456789abcdef", "{id}", "m1", "{kind}/{key}", "queue/tables").Replace(o.path)
		t.Run(o.String(), func(t *testing.T) {
			scope := doc.scope(o)
			switch scope {
			case "":
				rec := f.do(t, o.method, path, "", "", nil)
				require.NotEqual(t, http.StatusUnauthorized, rec.Code, "an open route needs no token")
			case string(ScopeRead):
				rec := f.do(t, o.method, path, "", "", nil)
				require.Equal(t, http.StatusUnauthorized, rec.Code, rec.Body.String())
				rec = f.do(t, o.method, path, "", "read", nil)
				require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, rec.Code, rec.Body.String())
			default:
				rec := f.do(t, o.method, path, "", below[scope], nil)
				require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
				require.Contains(t, rec.Header().Get("WWW-Authenticate"), `scope="`+scope+`"`)
			}
		})
	}
}

// TestOpenAPIAnswers sends requests to every documented route and checks
// each answer against the document: its status code is documented for the
// operation, its media type and required headers are the documented ones,
// and its body validates against the schema. Every operation must be seen
// answering with success.
func TestOpenAPIAnswers(t *testing.T) {
	doc := loadOpenAPI(t)
	f := setupOpenAPI(t)
	const policy = `{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris", "timeout": "1h",
		"retry": {"delays": ["1m", "5m"], "jitter": 0.1}, "disabled_message": "Disabled since {since}: {error}"}`
	type request struct {
		method, path, body, token string
		header                    map[string]string
		want                      int
		// then runs after the request, before the next one.
		then func(t *testing.T)
	}
	requests := []request{
		{method: "GET", path: "/openapi.json", token: "read", want: 200},
		{method: "GET", path: "/openapi.json?x=1", token: "read", want: 400},
		{method: "GET", path: "/healthz", want: 200},
		{method: "GET", path: "/metrics", token: "admin", want: 200},
		{method: "GET", path: "/metrics", token: "acme", want: 403},
		{method: "PUT", path: "/models/m1", body: `{"queue": "tables", "payload": {"input_url": "https://example.com/a.csv"}, "policy": ` + policy + `}`, token: "write", want: 201},
		{method: "PUT", path: "/models/m1", body: `{"id": "m1", "queue": "tables", "payload": {"input_url": "https://example.com/a.csv"}, "policy": ` + policy + `, "trigger": false}`, token: "write", want: 200},
		{method: "PUT", path: "/models/m1", body: `{}`, token: "write", header: map[string]string{"If-None-Match": "*"}, want: 412},
		{method: "PUT", path: "/models/m2", body: `{"policy": {"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}, "color": 1}`, token: "write", want: 400},
		{method: "PUT", path: "/models/m2", body: `{"payload": "` + strings.Repeat("x", maxBodyBytes) + `"}`, token: "write", want: 413},
		{method: "PUT", path: "/models/report", body: `{"upstreams": ["m1", "missing"], "upstreams_mode": "any"}`, token: "write", want: 201},
		{method: "PUT", path: "/models/m1", body: `{"queue": "tables", "payload": {"input_url": "https://example.com/a.csv"}, "policy": ` + policy + `, "upstreams": ["report"]}`, token: "write", want: 400},
		{method: "GET", path: "/models/report", token: "read", want: 200},
		{method: "PUT", path: "/limits/queue/tables", body: `{"max_running": 5}`, token: "admin", want: 200},
		{method: "PUT", path: "/limits/rate_key/api.example.com", body: `{"max_starts": 10, "per": "1m", "burst": 2}`, token: "admin", want: 200},
		{method: "PUT", path: "/limits/prefix/acme-", body: `{"max_running": 3, "max_starts": 100, "per": "PT1H", "burst": null}`, token: "admin", want: 200},
		{method: "PUT", path: "/limits/rate_key/api.example.com", body: `{"per": "1m"}`, token: "admin", want: 400},
		{method: "PUT", path: "/models/keyed", body: `{"rate_key": "api.example.com", "policy": {}}`, token: "write", want: 201},
		{method: "PATCH", path: "/models/keyed", body: `{"rate_key": null}`, token: "write", want: 200},
		{method: "PUT", path: "/limits/prefix/acme-", body: `{"max_running": -1}`, token: "admin", want: 400},
		{method: "PUT", path: "/limits/queue/tables", body: `{"max_running": 5}`, token: "acme", want: 403},
		{method: "GET", path: "/limits", token: "read", want: 200},
		{method: "DELETE", path: "/limits/queue/tables", token: "admin", want: 204},
		{method: "DELETE", path: "/limits/queue/tables", token: "admin", want: 404},
		{method: "PUT", path: "/models/on-demand", body: `{"policy": {"retry": {"backoff": {"strategy": "exponential", "base": "1m"}}}}`, token: "write", want: 201},
		{method: "PATCH", path: "/models/m1", body: `{"policy": {"timeout": "30m", "give_up_after": null}, "payload": null}`, token: "write", want: 200},
		{method: "PATCH", path: "/models/nope", body: `{"policy": {"timeout": "30m"}}`, token: "write", want: 404},
		{method: "POST", path: "/models/m1/trigger", token: "write", want: 200, then: func(t *testing.T) {
			// The attempt starts, then fails and plans a retry.
			jobs := f.tick(t)
			require.Len(t, jobs, 1)
			f.queue.Deliver(refresh.Outcome{ModelID: "m1", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"})
			_, err := f.consumer.RunOnce(context.Background())
			require.NoError(t, err)
			f.clock.Advance(2 * time.Minute)
			require.Len(t, f.tick(t), 1, "the retry starts")
		}},
		{method: "GET", path: "/models/m1", token: "read", want: 200},
		{method: "GET", path: "/models/m1", token: "acme", want: 403},
		{method: "GET", path: "/models/m1", want: 401},
		{method: "GET", path: "/models/m1%2Fx", token: "read", want: 400},
		{method: "GET", path: "/models/busy", token: "read", want: 503},
		{method: "GET", path: "/models?failing=true&running=true&disabled=false&paused=false&queue=tables&after=a&limit=10", token: "read", want: 200},
		{method: "GET", path: "/models?limit=0", token: "read", want: 400},
		{method: "GET", path: "/models/m1/attempts?limit=5", token: "read", want: 200},
		{method: "GET", path: "/models/nope/attempts", token: "read", want: 404},
		{method: "POST", path: "/models/m1/enable", token: "write", want: 200},
		{method: "POST", path: "/models/m1/pause", body: `{}`, token: "write", want: 200},
		{method: "POST", path: "/models/m1/resume", token: "write", want: 200},
		{method: "POST", path: "/models/m1/cancel", token: "write", want: 200},
		{method: "POST", path: "/models/m1/cancel", body: `{"reason": "x"}`, token: "write", want: 200},
		{method: "POST", path: "/models/m1/cancel", body: `{"reason": "` + strings.Repeat("x", refresh.MaxAuditReasonBytes+1) + `"}`, token: "write", want: 400},
		{method: "PATCH", path: "/models/m1", body: `{"policy": {"timeout": "45m"}, "reason": "slower input"}`, token: "write", want: 200},
		{method: "GET", path: "/models/m1/audit?limit=2", token: "read", want: 200},
		{method: "GET", path: "/models/m1/audit?after=x", token: "read", want: 400},
		{method: "GET", path: "/models/nope/audit", token: "read", want: 404},
		{method: "GET", path: "/models/m1/audit", token: "acme", want: 403},
		{method: "POST", path: "/bulk/pause", body: `{"selector": {"queue": "tables"}, "dry_run": true}`, token: "write", want: 200},
		{method: "POST", path: "/bulk/pause", body: `{"selector": {"prefix": "m", "state": "scheduled"}, "reason": "maintenance"}`, token: "write", want: 200},
		{method: "POST", path: "/bulk/resume", body: `{"all": true, "reason": "maintenance over"}`, token: "write", want: 200},
		{method: "POST", path: "/bulk/trigger", body: `{"selector": {"prefix": "acme-"}, "dry_run": false}`, token: "acme", want: 200},
		{method: "POST", path: "/bulk/enable", body: `{"selector": {"prefix": "m"}}`, token: "write", want: 200},
		{method: "POST", path: "/bulk/cancel", body: `{"selector": {"state": "running"}}`, token: "write", want: 200},
		{method: "POST", path: "/bulk/cancel", body: `{"selector": {}}`, token: "write", want: 400},
		{method: "POST", path: "/bulk/cancel", body: `{"selector": {"prefix": "m"}}`, token: "acme", want: 403},
		{method: "POST", path: "/bulk/cancel", body: `{"selector": {"prefix": "m"}}`, token: "read", want: 403},
		{method: "POST", path: "/models/nope/pause", token: "write", want: 404},
		{method: "GET", path: "/dead?limit=10", token: "admin", want: 200},
		{method: "GET", path: "/dead", token: "acme", want: 403},
		{method: "POST", path: "/dead/requeue", body: `{"ids": ["0123456789abcdef", "00000000000000ff"]}`, token: "admin", want: 200},
		{method: "POST", path: "/dead/requeue", body: `{}`, token: "admin", want: 400},
		{method: "POST", path: "/dead/drop", body: `{"all": true}`, token: "admin", want: 200},
		{method: "DELETE", path: "/dead/0123456789abcdef", token: "admin", want: 204},
		{method: "DELETE", path: "/dead/00000000000000ff", token: "admin", want: 404},
		{method: "DELETE", path: "/models/m1", token: "write", want: 403},
		{method: "DELETE", path: "/models/m1", token: "admin", want: 204},
		{method: "GET", path: "/models/m1", token: "read", want: 404},
		{method: "GET", path: "/models/m1/audit", token: "read", want: 200},
	}

	succeeded := map[string]bool{}
	for i, r := range requests {
		name := fmt.Sprintf("%d %s %s", i, r.method, r.path)
		rec := f.do(t, r.method, r.path, r.body, r.token, r.header)
		require.Equal(t, r.want, rec.Code, "%s: %s", name, rec.Body.String())
		o, ok := doc.find(r.method, strings.SplitN(r.path, "?", 2)[0])
		require.True(t, ok, "%s: no documented operation", name)
		checkAnswer(t, doc, o, rec)
		if rec.Code < 300 {
			succeeded[o.String()] = true
			checkRequestBody(t, doc, o, r.body)
		}
		if r.then != nil {
			r.then(t)
		}
	}
	for _, o := range doc.operations() {
		if o.op[servedBy] == nil {
			require.True(t, succeeded[o.String()], "%s is documented but no request of this test succeeded on it", o)
		}
	}
}

// checkAnswer checks rec against the response the operation documents for
// its status code.
func checkAnswer(t *testing.T, doc openapiDoc, o operation, rec *httptest.ResponseRecorder) {
	t.Helper()
	code := fmt.Sprint(rec.Code)
	responses := o.op["responses"].(map[string]any)
	res := doc.resolve(responses[code])
	require.NotNil(t, res, "%s answered %s, which it does not document: %s", o, code, rec.Body.String())
	for name, h := range doc.resolveMap(res["headers"]) {
		if req, _ := doc.resolve(h)["required"].(bool); req {
			require.NotEmpty(t, rec.Header().Get(name), "%s %s: header %s", o, code, name)
		}
	}
	content := doc.resolveMap(res["content"])
	if len(content) == 0 {
		require.Zero(t, rec.Body.Len(), "%s %s documents no body: %s", o, code, rec.Body.String())
		return
	}
	media, _, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	require.NoError(t, err, "%s %s: Content-Type", o, code)
	mt, ok := content[media]
	require.True(t, ok, "%s %s: media type %s is not documented", o, code, media)
	if media != "application/json" {
		return
	}
	var body any
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&body), "%s %s: body", o, code)
	schema := doc.resolve(mt)["schema"]
	require.NotNil(t, schema, "%s %s: no schema", o, code)
	errs := doc.validate(schema, body, "body")
	require.Empty(t, errs, "%s %s: %s", o, code, rec.Body.String())
}

// checkRequestBody checks that the body of a request the server took
// validates against the request body the operation documents.
func checkRequestBody(t *testing.T, doc openapiDoc, o operation, body string) {
	t.Helper()
	rb := doc.resolve(o.op["requestBody"])
	if body == "" {
		if rb != nil {
			required, _ := rb["required"].(bool)
			require.False(t, required, "%s took no body, but documents one as required", o)
		}
		return
	}
	require.NotNil(t, rb, "%s took a body it does not document", o)
	mt := doc.resolve(doc.resolveMap(rb["content"])["application/json"])
	require.NotNil(t, mt, "%s: no application/json request body", o)
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v))
	require.Empty(t, doc.validate(mt["schema"], v, "request"), "%s: %s", o, body)
}

// resolveMap returns the members of a map, or nil.
func (d openapiDoc) resolveMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// validate checks v against schema and returns what it breaks, each
// prefixed by at (the path of v). It knows the keywords the document uses:
// $ref, type, enum, const, required, properties, additionalProperties,
// items, allOf, anyOf, oneOf, minimum, maximum, exclusiveMaximum,
// minItems, maxItems, pattern and format date-time. An object must have no
// member that its schema (with its allOf and oneOf parts) does not
// declare, unless the schema declares none or allows others.
func (d openapiDoc) validate(schema any, v any, at string) []string {
	return d.check(schema, v, at, true)
}

// check is validate; strict is false for the parts of a schema ($ref,
// allOf, oneOf), whose whole is checked for undeclared members.
func (d openapiDoc) check(schema any, v any, at string, strict bool) []string {
	s, ok := schema.(map[string]any)
	if !ok {
		return nil // true, or no constraint
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	if ref, ok := s["$ref"].(string); ok {
		errs = append(errs, d.check(d.pointer(ref), v, at, false)...)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, e := range t {
				types = append(types, e.(string))
			}
		}
		if !slices.ContainsFunc(types, func(name string) bool { return isType(v, name) }) {
			bad("want %v, got %s", types, short(mustJSON(v)))
			return errs
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return jsonEqual(e, v) }) {
		bad("want one of %v, got %s", enum, short(mustJSON(v)))
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		bad("want %v, got %s", c, short(mustJSON(v)))
	}
	for _, sub := range anySlice(s["allOf"]) {
		errs = append(errs, d.check(sub, v, at, false)...)
	}
	if anyOf := anySlice(s["anyOf"]); anyOf != nil {
		// Each choice is a whole schema of v (the document uses anyOf for
		// "a schema, or null").
		if !slices.ContainsFunc(anyOf, func(sub any) bool { return len(d.check(sub, v, at, strict)) == 0 }) {
			var why []string
			for _, sub := range anyOf {
				why = append(why, d.check(sub, v, at, strict)...)
			}
			bad("matches none of the anyOf schemas: %s", strings.Join(why, "; "))
		}
	}
	if one := anySlice(s["oneOf"]); one != nil {
		n := 0
		for _, sub := range one {
			if len(d.check(sub, v, at, false)) == 0 {
				n++
			}
		}
		if n != 1 {
			bad("matches %d of the oneOf schemas, want 1", n)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range anySlice(s["required"]) {
			if _, ok := v[name.(string)]; !ok {
				bad("missing member %s", name)
			}
		}
		props := d.resolveMap(s["properties"])
		for name, val := range v {
			if p, ok := props[name]; ok {
				errs = append(errs, d.validate(p, val, at+"."+name)...)
			} else if extra, ok := s["additionalProperties"].(map[string]any); ok {
				errs = append(errs, d.validate(extra, val, at+"."+name)...)
			}
		}
		if declared := d.declared(s); strict && declared != nil && s["additionalProperties"] == nil {
			for name := range v {
				if !declared[name] {
					bad("member %s is not documented", name)
				}
			}
		}
		if s["additionalProperties"] == false {
			for name := range v {
				if _, ok := props[name]; !ok {
					bad("member %s is not allowed", name)
				}
			}
		}
	case []any:
		for i, e := range v {
			errs = append(errs, d.validate(s["items"], e, fmt.Sprintf("%s[%d]", at, i))...)
		}
		if n, ok := number(s["minItems"]); ok && float64(len(v)) < n {
			bad("want at least %v items, got %d", n, len(v))
		}
		if n, ok := number(s["maxItems"]); ok && float64(len(v)) > n {
			bad("want at most %v items, got %d", n, len(v))
		}
	case json.Number:
		f, _ := v.Float64()
		if n, ok := number(s["minimum"]); ok && f < n {
			bad("want >= %v, got %v", n, v)
		}
		if n, ok := number(s["maximum"]); ok && f > n {
			bad("want <= %v, got %v", n, v)
		}
		if n, ok := number(s["exclusiveMaximum"]); ok && f >= n {
			bad("want < %v, got %v", n, v)
		}
	case string:
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			bad("want a match of %s, got %q", p, v)
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				bad("want an RFC 3339 time, got %q", v)
			}
		}
	}
	return errs
}

// declared returns the members an object schema declares, through $ref,
// allOf and oneOf, or nil if it declares none.
func (d openapiDoc) declared(s map[string]any) map[string]bool {
	var names map[string]bool
	var add func(s map[string]any)
	add = func(s map[string]any) {
		if s == nil {
			return
		}
		if ref, ok := s["$ref"].(string); ok {
			m, _ := d.pointer(ref).(map[string]any)
			add(m)
		}
		for name := range d.resolveMap(s["properties"]) {
			if names == nil {
				names = map[string]bool{}
			}
			names[name] = true
		}
		for _, sub := range append(anySlice(s["allOf"]), anySlice(s["oneOf"])...) {
			m, _ := sub.(map[string]any)
			add(m)
		}
	}
	add(s)
	return names
}

func isType(v any, name string) bool {
	switch name {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func jsonEqual(a, b any) bool { return bytes.Equal(mustJSON(a), mustJSON(b)) }

// openapiStart is 05:30 UTC on a Monday.
var openapiStart = time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC)

// openapiFixture is a server with tokens of each scope ("read", "write",
// "admin", and "acme", read limited to the prefix acme-), a dead-letter
// list, and the loops that run its models.
type openapiFixture struct {
	handler   http.Handler
	clock     *refresh.VirtualClock
	queue     *memory.Queue
	scheduler *refresh.Scheduler
	consumer  *refresh.Consumer
}

func setupOpenAPI(t *testing.T) *openapiFixture {
	t.Helper()
	f := &openapiFixture{clock: refresh.NewVirtualClock(openapiStart)}
	store := busyStore{memory.NewStore()}
	f.queue = memory.NewQueue(f.clock)
	var err error
	f.scheduler, err = refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: f.queue, Clock: f.clock})
	require.NoError(t, err)
	f.consumer, err = refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: f.queue, Clock: f.clock})
	require.NoError(t, err)
	var tokens []Token
	for _, tok := range []Token{
		{Name: "read", Scopes: []Scope{ScopeRead}},
		{Name: "write", Scopes: []Scope{ScopeWrite}},
		{Name: "admin", Scopes: []Scope{ScopeAdmin}},
		{Name: "acme", Scopes: []Scope{ScopeAdmin}, Prefix: "acme-"},
	} {
		tok.Hash = HashToken("secret-" + tok.Name)
		tokens = append(tokens, tok)
	}
	auth, err := NewAuth(tokens, nil)
	require.NoError(t, err)
	svc := &refresh.Service{Store: store, Clock: f.clock}
	f.handler = NewServer(svc, WithAuth(auth), WithDeadLetters(&fakeDead{at: openapiStart}))
	return f
}

// do sends a request with the token named token ("" for none).
func (f *openapiFixture) do(t *testing.T, method, path, body, token string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer secret-"+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

// tick runs a scheduler pass and returns the jobs it pushed.
func (f *openapiFixture) tick(t *testing.T) []refresh.Job {
	t.Helper()
	_, err := f.scheduler.RunOnce(context.Background())
	require.NoError(t, err)
	return f.queue.Take("tables", 10)
}

// busyStore answers that model "busy" is locked too long, as PostgreSQL
// does past its lock_timeout.
type busyStore struct{ *memory.Store }

func (s busyStore) Get(ctx context.Context, id string) (refresh.Model, error) {
	if id == "busy" {
		return refresh.Model{}, refresh.Errorf(refresh.EUNAVAILABLE, "model %q is locked", id)
	}
	return s.Store.Get(ctx, id)
}

// fakeDead is a dead-letter list of two entries, one that can be
// requeued and one that cannot.
type fakeDead struct{ at time.Time }

var deadIDs = []string{"0123456789abcdef", "fedcba9876543210"}

func (d *fakeDead) DeadLetters(context.Context, string, int) ([]refresh.DeadLetter, string, error) {
	return []refresh.DeadLetter{
		{ID: deadIDs[0], At: d.at, Reason: "attempt_uid: missing", Message: `{"model_id":"m1","outcome":"success"}`, List: "outcomes"},
		{ID: deadIDs[1], At: d.at, Reason: "too large: must be at most 1048576 bytes, got 2000000", Message: "{", Refusal: "the message was cut"},
	}, "2", nil
}

func (d *fakeDead) RequeueDead(_ context.Context, ids []string) (refresh.DeadResult, error) {
	return d.result(ids, true), nil
}

func (d *fakeDead) RequeueAllDead(context.Context) (refresh.DeadResult, error) {
	return d.result(deadIDs, true), nil
}

func (d *fakeDead) DropDead(_ context.Context, ids []string) (refresh.DeadResult, error) {
	return d.result(ids, false), nil
}

func (d *fakeDead) DropAllDead(context.Context) (refresh.DeadResult, error) {
	return d.result(deadIDs, false), nil
}

// result handles ids as the list would: the first entry is done, the
// second refused by a requeue (dropped by a drop), others missing.
func (d *fakeDead) result(ids []string, requeue bool) refresh.DeadResult {
	var res refresh.DeadResult
	for _, id := range ids {
		switch {
		case id == deadIDs[0], id == deadIDs[1] && !requeue:
			res.Done++
		case id == deadIDs[1]:
			res.Refused = append(res.Refused, refresh.DeadRefusal{ID: id, Reason: "the message was cut"})
		default:
			res.Missing = append(res.Missing, id)
		}
	}
	return res
}
