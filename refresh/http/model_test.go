package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestPutCreatesThenReplaces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.raw(t, "PUT", "/models/bigtable-1", `{"queue": "tables", "payload": {"input_url": "s3://x"},
		"policy": {"schedule": "`+parisSchedule+`", "timezone": "Europe/Paris"}}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.Equal(t, "/models/bigtable-1", rec.Header().Get("Location"))

	code, m := b.do(t, "GET", "/models/bigtable-1", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "bigtable-1", m["id"])
	require.Equal(t, "tables", m["queue"])
	require.Equal(t, map[string]any{"input_url": "s3://x"}, m["payload"])
	require.Equal(t, "2026-03-02T05:30:00Z", m["created_at"])
	require.Equal(t, "2026-03-02T15:00:00Z", m["refresh_at"]) // 16:00 Paris
	for _, k := range []string{"deadline_at", "attempt_uid", "started_at", "failing_since", "last_success_at",
		"last_error", "disabled_at", "disabled_reason", "status_message"} {
		require.Contains(t, m, k)
		require.Nil(t, m[k], k)
	}
	require.Equal(t, false, m["disabled"])
	require.Equal(t, false, m["running"])
	policy := m["policy"].(map[string]any)
	require.Equal(t, "1h", policy["timeout"])

	// Replacing moves the plan to the new schedule; trigger asks for now.
	code, m = b.do(t, "PUT", "/models/bigtable-1", `{"queue": "tables", "policy": {"schedule": "FREQ=HOURLY"}}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, "2026-03-02T06:00:00Z", m["refresh_at"])
	require.Nil(t, m["payload"])
	code, m = b.do(t, "PUT", "/models/bigtable-1", `{"trigger": true}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, "2026-03-02T05:30:00Z", m["refresh_at"])
	require.Equal(t, "default", m["queue"])
}

func TestPutValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		body   string
		error  string
		fields []any
	}{
		{
			name: "policy rule", path: "/models/m1",
			body:   `{"policy": {"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}}`,
			error:  "policy.retry.backoff.multiplier: must be >= 1, got 0.5",
			fields: []any{map[string]any{"field": "policy.retry.backoff.multiplier", "rule": "must be >= 1, got 0.5"}},
		},
		{
			name: "several", path: "/models/-bad",
			body:  `{"policy": {"timeout": "soon", "on_exhausted": "wait_next"}}`,
			error: `id: must be 1 to 200 letters, digits or ._:@- starting with a letter or digit; policy.timeout: must be a duration like "90s" or "PT5M", got "soon"; policy.on_exhausted: wait_next needs a schedule`,
		},
		{
			name: "id and members", path: "/models/-bad", body: `{"polcy": {}}`,
			error: "id: must be 1 to 200 letters, digits or ._:@- starting with a letter or digit; polcy: unknown field; want queue, payload, policy, upstreams, upstreams_mode, rate_key, trigger or reason",
		},
		{name: "not JSON", path: "/models/m1", body: `{"policy": `, error: "body: invalid JSON at byte 11: unexpected end of JSON input"},
		{name: "garbage", path: "/models/m1", body: `hello`, error: "body: invalid JSON at byte 1: invalid character 'h' looking for beginning of value"},
		{name: "array", path: "/models/m1", body: `[1]`, error: "body: must be a JSON object"},
		{name: "null", path: "/models/m1", body: `null`, error: "body: must be a JSON object"},
		{name: "empty", path: "/models/m1", body: ``, error: `body: is empty; send a JSON object such as {"policy": {}}; PUT replaces the whole model`},
		{
			name: "members", path: "/models/m1", body: `{"id": "m2", "queue": 3, "trigger": "yes", "polcy": {}}`,
			error: `id: must be the id of the path, "m1", or left out; queue: must be a string, got 3; trigger: must be true or false, got "yes"; polcy: unknown field; want queue, payload, policy, upstreams, upstreams_mode, rate_key, trigger or reason`,
		},
		{name: "payload", path: "/models/m1", body: `{"payload": "x", "policy": "daily"}`, error: "policy: must be a JSON object, got \"daily\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			code, body := b.do(t, "PUT", tt.path, tt.body)
			require.Equal(t, http.StatusBadRequest, code, body)
			require.Equal(t, tt.error, body["error"])
			require.NotEmpty(t, body["fields"])
			if tt.fields != nil {
				require.Equal(t, tt.fields, body["fields"])
			}
			models, err := b.store.List(context.Background(), refresh.Filter{})
			require.NoError(t, err)
			require.Empty(t, models, "nothing written")
		})
	}
}

func TestPutBodyTooLarge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.do(t, "PUT", "/models/m1", `{"payload": "`+strings.Repeat("x", 1<<20)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Equal(t, "body: must be at most 1 MiB", body["error"])
}

func TestGetNextRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "paris", `{"policy": {"schedule": "`+parisSchedule+`"}}`)
	b.put(t, "ondemand", `{}`)
	b.put(t, "triggered", `{"trigger": true}`)
	b.put(t, "finite", `{"policy": {"schedule": "DTSTART:20260302T060000Z\nRRULE:FREQ=DAILY;COUNT=2"}}`)

	runs := func(id string) []any {
		t.Helper()
		code, m := b.do(t, "GET", "/models/"+id, "")
		require.Equal(t, http.StatusOK, code, m)
		require.Contains(t, m, "next_runs")
		return m["next_runs"].([]any)
	}
	require.Equal(t, []any{"2026-03-02T15:00:00Z", "2026-03-03T05:00:00Z", "2026-03-03T15:00:00Z",
		"2026-03-04T05:00:00Z", "2026-03-04T15:00:00Z"}, runs("paris"))
	require.Equal(t, []any{}, runs("ondemand"))
	require.Equal(t, []any{"2026-03-02T05:30:00Z"}, runs("triggered"))
	require.Equal(t, []any{"2026-03-02T06:00:00Z", "2026-03-03T06:00:00Z"}, runs("finite"))

	// Running: the occurrences after now. Disabled: none.
	b.do(t, "POST", "/models/paris/trigger", "")
	jobs := b.tick(t, "default")
	require.Len(t, jobs, 2)
	require.Equal(t, "2026-03-02T15:00:00Z", runs("paris")[0])
	b.deliver(t, refresh.Outcome{ModelID: "paris", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure, Kind: "validation", Message: "bad input"})
	code, m := b.do(t, "GET", "/models/paris", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, m["disabled"])
	require.Equal(t, "Refresh disabled after 1 failed attempt(s).", m["disabled_reason"], "the default message carries no worker text")
	require.Equal(t, map[string]any{"kind": "validation", "message": "bad input", "at": "2026-03-02T05:30:00Z"}, m["last_error"])
	require.Equal(t, []any{}, m["next_runs"])

	code, m = b.do(t, "GET", "/models/nope", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, `model "nope" not found`, m["error"])
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 1; i <= 5; i++ {
		b.put(t, fmt.Sprintf("m%d", i), `{"queue": "q`+fmt.Sprint(i%2)+`"}`)
	}
	// m1 runs, m2 fails and retries, m3 is disabled, m4 is paused.
	for _, id := range []string{"m1", "m2", "m3"} {
		b.do(t, "POST", "/models/"+id+"/trigger", "")
	}
	b.do(t, "POST", "/models/m4/pause", "")
	jobs := append(b.tick(t, "q0"), b.tick(t, "q1")...)
	require.Len(t, jobs, 3)
	uid := map[string]string{}
	for _, j := range jobs {
		uid[j.ModelID] = j.AttemptUID
	}
	no := false
	b.deliver(t,
		refresh.Outcome{ModelID: "m2", AttemptUID: uid["m2"], Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"},
		refresh.Outcome{ModelID: "m3", AttemptUID: uid["m3"], Type: refresh.OutcomeFailure, Kind: "boom", Retryable: &no},
	)

	ids := func(query string) ([]string, string) {
		t.Helper()
		code, body := b.do(t, "GET", "/models"+query, "")
		require.Equal(t, http.StatusOK, code, body)
		var out []string
		for _, m := range body["models"].([]any) {
			out = append(out, m.(map[string]any)["id"].(string))
		}
		return out, body["next"].(string)
	}
	all, next := ids("")
	require.Equal(t, []string{"m1", "m2", "m3", "m4", "m5"}, all)
	require.Empty(t, next)

	for query, want := range map[string][]string{
		"?disabled=true":              {"m3"},
		"?failing=true":               {"m2", "m3"},
		"?failing=true&disabled=0":    {"m2"},
		"?running=true":               {"m1"},
		"?running=false&paused=false": {"m2", "m3", "m5"},
		"?paused=true":                {"m4"},
		"?queue=q1":                   {"m1", "m3", "m5"},
		"?queue=none":                 nil,
		"?after=m3":                   {"m4", "m5"},
	} {
		got, _ := ids(query)
		require.Equal(t, want, got, query)
	}

	// Pages of two.
	page, next := ids("?limit=2")
	require.Equal(t, []string{"m1", "m2"}, page)
	require.Equal(t, "m2", next)
	page, next = ids("?limit=2&after=" + next)
	require.Equal(t, []string{"m3", "m4"}, page)
	require.Equal(t, "m4", next)
	page, next = ids("?limit=2&after=" + next)
	require.Equal(t, []string{"m5"}, page)
	require.Empty(t, next)
	page, next = ids("?limit=5")
	require.Len(t, page, 5)
	require.Empty(t, next)

	code, body := b.do(t, "GET", "/models?queue=none", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []any{}, body["models"])
}

// TestListPayloadBound: a page holds at most refresh.BatchPayloadBytes of
// payloads, whatever its limit; it ends early with a cursor, and the pages
// together list every model once.
func TestListPayloadBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"payload": "` + strings.Repeat("x", 60_000) + `"}`
	perPage := refresh.BatchPayloadBytes / 60_002
	for i := 1; i <= perPage+1; i++ {
		b.put(t, fmt.Sprintf("m%03d", i), body)
	}
	var pages [][]string
	for path := "/models?limit=1000"; ; {
		code, res := b.do(t, "GET", path, "")
		require.Equal(t, http.StatusOK, code, res)
		var page []string
		for _, m := range res["models"].([]any) {
			page = append(page, m.(map[string]any)["id"].(string))
		}
		pages = append(pages, page)
		next := res["next"].(string)
		if next == "" {
			break
		}
		require.Equal(t, page[len(page)-1], next)
		path = "/models?limit=1000&after=" + next
	}
	require.Len(t, pages, 2)
	require.Len(t, pages[0], perPage)
	require.Equal(t, []string{fmt.Sprintf("m%03d", perPage+1)}, pages[1])
}

func TestListBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for query, want := range map[string]string{
		"?disabled=maybe":     `disabled: must be true or false, got "maybe"`,
		"?running=":           `running: must be true or false, got ""`,
		"?limit=0":            `limit: must be an integer between 1 and 1000, got "0"`,
		"?limit=ten":          `limit: must be an integer between 1 and 1000, got "ten"`,
		"?limit=1001":         `limit: must be an integer between 1 and 1000, got "1001"`,
		"?disable=true":       "disable: unknown parameter; want one of disabled, failing, running, paused, queue, after, limit",
		"?queue=a&queue=b":    "queue: must be given once",
		"?failing=x&paused=y": `failing: must be true or false, got "x"; paused: must be true or false, got "y"`,
	} {
		code, body := b.do(t, "GET", "/models"+query, "")
		require.Equal(t, http.StatusBadRequest, code, query)
		require.Equal(t, want, body["error"], query)
		require.NotEmpty(t, body["fields"], query)
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"policy": {"schedule": "FREQ=HOURLY", "retry": {"delays": []}}}`)

	act := func(action string) (map[string]any, map[string]any) {
		t.Helper()
		code, body := b.do(t, "POST", "/models/m1/"+action, "")
		require.Equal(t, http.StatusOK, code, body)
		return body["model"].(map[string]any), body["decision"].(map[string]any)
	}

	m, d := act("trigger")
	require.Equal(t, "trigger", d["event"])
	require.Equal(t, "trigger", d["rule"])
	require.Equal(t, "refresh requested", d["why"])
	require.Equal(t, "2026-03-02T05:30:00Z", m["refresh_at"])
	require.Len(t, m["next_runs"], 5)

	jobs := b.tick(t, "default")
	require.Len(t, jobs, 1)
	m, d = act("cancel")
	require.Equal(t, "cancel", d["event"])
	require.Equal(t, false, m["running"])
	require.Equal(t, "2026-03-02T06:00:00Z", m["refresh_at"])

	m, d = act("pause")
	require.Equal(t, "pause", d["event"])
	require.Equal(t, true, m["paused"])
	b.clock.Set(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	require.Empty(t, b.tick(t, "default"))
	m, d = act("resume")
	require.Equal(t, "resume", d["event"])
	require.Equal(t, "resumed; overdue run 2026-03-02T06:00:00Z starts now", d["why"])
	require.Equal(t, false, m["paused"])

	// No retries: the first failure disables; enable brings it back.
	jobs = b.tick(t, "default")
	require.Len(t, jobs, 1)
	b.deliver(t, refresh.Outcome{ModelID: "m1", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"})
	m, d = act("enable")
	require.Equal(t, "enable", d["event"])
	require.Equal(t, false, m["disabled"])
	require.Equal(t, "2026-03-02T09:00:00Z", m["refresh_at"])
	_, d = act("enable")
	require.Equal(t, "not disabled: nothing changes", d["why"])

	code, body := b.do(t, "POST", "/models/nope/trigger", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, `model "nope" not found`, body["error"])
	code, _ = b.do(t, "GET", "/models/m1/trigger", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

func TestDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{}`)
	rec := b.raw(t, "DELETE", "/models/m1", "")
	require.Equal(t, http.StatusNoContent, rec.Code)
	require.Empty(t, rec.Body.String())
	code, _ := b.do(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusNotFound, code)
	code, body := b.do(t, "DELETE", "/models/m1", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, `model "m1" not found`, body["error"])
}

func TestAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"trigger": true}`)
	code, body := b.do(t, "GET", "/models/m1/attempts", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []any{}, body["attempts"])

	jobs := b.tick(t, "default")
	b.clock.Advance(2 * time.Minute)
	b.deliver(t, refresh.Outcome{ModelID: "m1", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"})
	jobs = b.tick(t, "default") // delays[0] is 0s: the retry starts at once

	code, body = b.do(t, "GET", "/models/m1/attempts", "")
	require.Equal(t, http.StatusOK, code)
	list := body["attempts"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, map[string]any{
		"uid": jobs[0].AttemptUID, "attempt_no": 2.0, "started_at": "2026-03-02T05:32:00Z",
		"deadline_at": "2026-03-02T06:32:00Z", "finished_at": nil, "outcome": nil,
	}, list[0])
	require.Equal(t, map[string]any{
		"uid": "u1", "attempt_no": 1.0, "started_at": "2026-03-02T05:30:00Z",
		"deadline_at": "2026-03-02T06:30:00Z", "finished_at": "2026-03-02T05:32:00Z", "outcome": "failure",
		"error_kind": "http_503", "error_message": "upstream 503", "decision": "retry", "delay": "0s",
	}, list[1])

	code, body = b.do(t, "GET", "/models/m1/attempts?limit=1", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, body["attempts"], 1)

	code, body = b.do(t, "GET", "/models/m1/attempts?limit=-1", "")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `limit: must be an integer between 1 and 1000, got "-1"`, body["error"])
	code, body = b.do(t, "GET", "/models/m1/attempts?n=1", "")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "n: unknown parameter; want one of limit, before", body["error"])
	code, _ = b.do(t, "GET", "/models/nope/attempts", "")
	require.Equal(t, http.StatusNotFound, code)
}

func TestPutBoundsThePayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name, body, error string
	}{
		{"deep", `{"payload": ` + nested(9000) + `}`, "payload: nested deeper than 32 levels"},
		{"one too deep", `{"payload": ` + nested(33) + `}`, "payload: nested deeper than 32 levels"},
		{"large", `{"payload": "` + strings.Repeat("x", 64<<10) + `"}`, "payload: must be at most 65536 bytes, got 65538"},
	}
	for _, tt := range tests {
		code, body := b.do(t, "PUT", "/models/m1", tt.body)
		require.Equal(t, http.StatusBadRequest, code, tt.name)
		require.Equal(t, tt.error, body["error"], tt.name)
	}
	b.put(t, "m1", `{"payload": `+nested(32)+`}`)
	// A NUL escape is kept as written.
	b.put(t, "m2", `{"payload": {"a": "x\u0000y"}}`)
	rec := b.raw(t, "GET", "/models/m2", "")
	require.Contains(t, rec.Body.String(), `"payload":{"a":"x\u0000y"}`)
}

func TestPutBodyRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.do(t, "PUT", "/models/m1", `{"queue": "a", "policy": {}, "queue": "b"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "queue: duplicate field", body["error"])

	// Thousands of unknown fields: the first MaxFieldErrors are reported.
	var many strings.Builder
	many.WriteString("{")
	for i := range 5000 {
		fmt.Fprintf(&many, `"x%d": 1, `, i)
	}
	many.WriteString(`"queue": "q"}`)
	rec := b.raw(t, "PUT", "/models/m1", many.String())
	require.Equal(t, http.StatusBadRequest, rec.Code)
	_, fields := errorOf(t, rec)
	require.Len(t, fields, refresh.DefaultLimits().MaxFieldErrors)
	require.Equal(t, "x0", fields[0])
	require.Equal(t, "x19", fields[19])
	// So are those of a policy.
	rec = b.raw(t, "PUT", "/models/m1", `{"policy": `+strings.Replace(many.String(), `"queue": "q"`, `"timeout": "1h"`, 1)+`}`)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	_, fields = errorOf(t, rec)
	require.Len(t, fields, refresh.DefaultLimits().MaxFieldErrors)
	require.Equal(t, "policy.x0", fields[0])
}

func TestPutReplacesTheWholeModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"queue": "tables", "payload": {"v": 1}, "policy": {"schedule": "FREQ=HOURLY", "timeout": "10m"}}`)
	code, m := b.do(t, "PUT", "/models/m1", `{"payload": {"v": 2}}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, "default", m["queue"], "a member left out takes its default")
	policy := m["policy"].(map[string]any)
	require.NotContains(t, policy, "schedule")
	require.Equal(t, "1h", policy["timeout"])
	require.Nil(t, m["refresh_at"], "an on-demand model now")
}

func TestPatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.do(t, "PATCH", "/models/m1", `{"queue": "q"}`)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, `model "m1" not found`, body["error"])

	b.put(t, "m1", `{"queue": "tables", "payload": {"url": "s3://x", "opts": {"a": 1, "b": 2}}, "policy": {"schedule": "FREQ=HOURLY", "timeout": "10m", "retry": {"delays": ["1m"]}}}`)
	code, m := b.do(t, "PATCH", "/models/m1", `{"payload": {"opts": {"a": null, "c": 3}}}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, map[string]any{"url": "s3://x", "opts": map[string]any{"b": 2.0, "c": 3.0}}, m["payload"])
	require.Equal(t, "tables", m["queue"])
	require.Equal(t, "2026-03-02T06:00:00Z", m["refresh_at"])

	code, m = b.do(t, "PATCH", "/models/m1", `{"policy": {"timeout": "20m", "retry": {"delays": null, "backoff": {"strategy": "fixed", "base": "5m"}}}}`)
	require.Equal(t, http.StatusOK, code, m)
	policy := m["policy"].(map[string]any)
	require.Equal(t, "FREQ=HOURLY", policy["schedule"])
	require.Equal(t, "20m", policy["timeout"])
	require.Equal(t, "fixed", policy["retry"].(map[string]any)["backoff"].(map[string]any)["strategy"])

	code, m = b.do(t, "PATCH", "/models/m1", `{"queue": null, "policy": {"schedule": null}, "trigger": true}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, "default", m["queue"])
	require.NotContains(t, m["policy"], "schedule")
	require.Equal(t, "2026-03-02T05:30:00Z", m["refresh_at"])

	for _, tt := range []struct{ body, error string }{
		{`{"policy": {"on_exhausted": "wait_next"}}`, "policy.on_exhausted: wait_next needs a schedule"},
		{`{"policy": {"retry": {"backoff": {"strategy": "immediate"}}}}`, "policy.retry.backoff.base: is not used by the immediate strategy"},
		{`{"policy": "daily"}`, `policy: must be a JSON object, got "daily"`},
		{`{"payload": ` + nested(40) + `}`, "payload: nested deeper than 32 levels"},
		{`{"queue": "a", "queue": "b"}`, "queue: duplicate field"},
		{`{"polcy": {}}`, "polcy: unknown field; want queue, payload, policy, upstreams, upstreams_mode, rate_key, trigger or reason"},
		{``, `body: is empty; send a JSON merge patch such as {"payload": {"key": "value"}}`},
	} {
		code, body := b.do(t, "PATCH", "/models/m1", tt.body)
		require.Equal(t, http.StatusBadRequest, code, tt.body)
		require.Equal(t, tt.error, body["error"], tt.body)
	}
	code, after := b.do(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusOK, code)
	delete(m, "next_runs")
	delete(after, "next_runs")
	require.Equal(t, m, after, "refused patches write nothing")
}

// request sends a request with headers (name, value pairs).
func (b *bundle) request(t *testing.T, method, target, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return b.send(req)
}

func TestETagAndPreconditions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.request(t, "PUT", "/models/m1", `{"payload": {"v": 1}}`, "If-None-Match", "*")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	tag1 := rec.Header().Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, tag1)
	rec = b.request(t, "PUT", "/models/m1", `{"payload": {"v": 1}}`, "If-None-Match", "*")
	require.Equal(t, http.StatusPreconditionFailed, rec.Code)
	msg, _ := errorOf(t, rec)
	require.Equal(t, `model "m1" already exists`, msg)

	// The tag is the definition's: actions and runs do not change it.
	b.do(t, "POST", "/models/m1/trigger", "")
	require.Len(t, b.tick(t, "default"), 1)
	rec = b.raw(t, "GET", "/models/m1", "")
	require.Equal(t, tag1, rec.Header().Get("ETag"))

	rec = b.request(t, "PUT", "/models/m1", `{"payload": {"v": 2}}`, "If-Match", `"0123", `+tag1)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	tag2 := rec.Header().Get("ETag")
	require.NotEqual(t, tag1, tag2)

	// A stale tag changes nothing.
	for _, method := range []string{"PUT", "PATCH"} {
		rec = b.request(t, method, "/models/m1", `{"payload": {"v": 3}}`, "If-Match", tag1)
		require.Equal(t, http.StatusPreconditionFailed, rec.Code, method)
		require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
		msg, _ := errorOf(t, rec)
		require.Equal(t, `model "m1" has changed: its definition tag is now `+tag2, msg)
	}
	rec = b.request(t, "PATCH", "/models/m1", `{"payload": {"v": 3}}`, "If-Match", "W/"+tag2)
	require.Equal(t, http.StatusPreconditionFailed, rec.Code, "a weak tag never matches If-Match")
	rec = b.request(t, "PATCH", "/models/m1", `{"payload": {"v": 3}}`, "If-Match", tag2)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	tag3 := rec.Header().Get("ETag")
	rec = b.request(t, "PUT", "/models/m1", `{"payload": {"v": 3}}`, "If-Match", "*")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, tag3, rec.Header().Get("ETag"), "the same definition, the same tag")

	rec = b.request(t, "PUT", "/models/m2", `{}`, "If-Match", "*")
	require.Equal(t, http.StatusPreconditionFailed, rec.Code, "If-Match on a model that does not exist")
	rec = b.request(t, "PATCH", "/models/m2", `{}`, "If-Match", "*")
	require.Equal(t, http.StatusNotFound, rec.Code)
	for _, h := range [][]string{{"If-Match", "abc"}, {"If-Match", `"abc`}, {"If-Match", `"a" "b"`}, {"If-None-Match", ""}} {
		rec = b.request(t, "PUT", "/models/m1", `{}`, h...)
		require.Equal(t, http.StatusBadRequest, rec.Code, h)
		_, fields := errorOf(t, rec)
		require.Equal(t, []string{h[0]}, fields)
	}
	rec = b.request(t, "PATCH", "/models/m1", `{}`, "If-None-Match", "*")
	require.Equal(t, http.StatusBadRequest, rec.Code)
	rec = b.raw(t, "GET", "/models/m1", "")
	require.Equal(t, tag3, rec.Header().Get("ETag"), "refused writes change nothing")
}

func TestActionBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{}`)
	for _, body := range []string{"", " \n", "{}", "{ }"} {
		code, res := b.do(t, "POST", "/models/m1/trigger", body)
		require.Equal(t, http.StatusOK, code, "%q: %v", body, res)
	}
	for body, want := range map[string]string{
		`{"color": "red"}`:       `color: unknown field; this request takes an empty body or {"reason": "..."}`,
		`{"reason": 3}`:          "reason: must be a string, got 3",
		`{"reason": "a\u0000b"}`: "reason: must not hold NUL or other control characters (tab and newline are allowed)",
		`[]`:                     "body: must be a JSON object",
		`null`:                   "body: must be a JSON object",
		`{`:                      "body: invalid JSON at byte 1: unexpected end of JSON input",
		"\"\xff\"":               "body: must be UTF-8",
	} {
		for _, target := range []string{"/models/m1/pause", "/models/m1"} {
			method := "POST"
			if target == "/models/m1" {
				method = "DELETE"
			}
			code, res := b.do(t, method, target, body)
			require.Equal(t, http.StatusBadRequest, code, body)
			require.Equal(t, want, res["error"], body)
		}
	}
	code, m := b.do(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusOK, code, "not deleted")
	require.Equal(t, false, m["paused"], "not paused")
	code, _ = b.do(t, "DELETE", "/models/m1", "{}")
	require.Equal(t, http.StatusNoContent, code)
}

func TestActionsTellWhetherTheyChangedAnything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{}`)
	code, res := b.do(t, "POST", "/models/m1/pause", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, res["changed"])
	code, again := b.do(t, "POST", "/models/m1/pause", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, false, again["changed"])
	require.Equal(t, res["model"], again["model"], "the unchanged model")
	code, res = b.do(t, "POST", "/models/m1/enable", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, false, res["changed"], "enable on a model that is not disabled")
	require.Equal(t, "not disabled: nothing changes", res["decision"].(map[string]any)["why"])
}
