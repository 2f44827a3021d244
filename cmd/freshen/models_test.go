package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// testTokens are serve's tokens in the tests of this file; the secret of
// each is its name.
var testTokens = "[" + strings.Join([]string{
	tokenEntry("reader", "read", ""),
	tokenEntry("writer", "write", ""),
	tokenEntry("admin", "admin", ""),
	tokenEntry("acme", "admin", "acme-"),
}, ",") + "]"

// call sends a request to p with token ("" for none) and returns the
// status, the headers and the decoded JSON body (nil if none).
func call(t *testing.T, p *proc, method, path, token, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(data) > 0 && resp.Header.Get("Content-Type") == "application/json; charset=utf-8" {
		require.NoError(t, json.Unmarshal(data, &out), string(data))
	}
	return resp.StatusCode, resp.Header, out
}

// cli runs a freshen client command against p with token and returns its
// exit status and output.
func cli(t *testing.T, p *proc, token, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--server", p.base, "--token", token)
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestE2EAuth runs freshen serve with tokens: requests without a token, with
// an unknown one, with a read token on an action and with a token limited
// to another customer's prefix are refused; a prefix-limited token lists
// only its models.
func TestE2EAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("auth-test", "--tokens", testTokens)
	for _, id := range []string{"acme-1", "acme-2", "globex-1"} {
		code, _, body := call(t, p, "PUT", "/models/"+id, "admin", `{"queue": "q"}`)
		require.Equal(t, http.StatusCreated, code, body)
	}

	tests := []struct {
		name         string
		method, path string
		token        string
		body         string
		code         int
		error        string
		challenge    string
	}{
		{"liveness is open", "GET", "/healthz", "", "", 200, "", ""},
		{"readiness is open", "GET", "/readyz", "", "", 200, "", ""},
		{"no token", "GET", "/models/acme-1", "", "", 401,
			`missing bearer token: send the header "Authorization: Bearer <token>"`, `Bearer realm="freshen"`},
		{"wrong token", "GET", "/models/acme-1", "nobody", "", 401, "unknown bearer token", `Bearer realm="freshen", error="invalid_token"`},
		{"metrics without a token", "GET", "/metrics", "", "", 401,
			`missing bearer token: send the header "Authorization: Bearer <token>"`, `Bearer realm="freshen"`},
		{"metrics with read", "GET", "/metrics", "reader", "", 200, "", ""},
		{"read token on an action", "POST", "/models/acme-1/trigger", "reader", "", 403,
			`token "reader" has scope read; POST /models/acme-1/trigger needs scope write`,
			`Bearer realm="freshen", error="insufficient_scope", scope="write"`},
		{"write token on an action", "POST", "/models/acme-1/pause", "writer", "", 200, "", ""},
		{"write token on a delete", "DELETE", "/models/acme-2", "writer", "", 403,
			`token "writer" has scope write; DELETE /models/acme-2 needs scope admin`,
			`Bearer realm="freshen", error="insufficient_scope", scope="admin"`},
		{"prefix token on another customer's model", "GET", "/models/globex-1", "acme", "", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token acts on another customer's model", "POST", "/models/globex-1/trigger", "acme", "", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token creates outside", "PUT", "/models/globex-2", "acme", "{}", 403,
			`token "acme" is limited to the models whose id starts with "acme-"`, ""},
		{"prefix token on dead letters", "GET", "/dead", "acme", "", 403,
			`token "acme" is limited to the models whose id starts with "acme-"; GET /dead needs a token without a prefix`, ""},
		{"prefix token on its model", "GET", "/models/acme-2/attempts", "acme", "", 200, "", ""},
	}
	for _, tt := range tests {
		code, header, body := call(t, p, tt.method, tt.path, tt.token, tt.body)
		require.Equal(t, tt.code, code, "%s: %v", tt.name, body)
		require.Equal(t, tt.challenge, header.Get("WWW-Authenticate"), tt.name)
		if tt.error != "" {
			require.Equal(t, map[string]any{"error": tt.error}, body, tt.name)
		}
	}

	// Nothing refused happened: globex-1 was not triggered, globex-2 not
	// created, acme-2 not deleted.
	code, _, m := call(t, p, "GET", "/models/globex-1", "reader", "")
	require.Equal(t, http.StatusOK, code)
	require.Nil(t, m["refresh_at"], m)
	code, _, _ = call(t, p, "GET", "/models/globex-2", "admin", "")
	require.Equal(t, http.StatusNotFound, code)
	code, _, _ = call(t, p, "GET", "/models/acme-2", "admin", "")
	require.Equal(t, http.StatusOK, code)

	// The prefix-limited list, through the API and the CLI.
	code, _, list := call(t, p, "GET", "/models", "acme", "")
	require.Equal(t, http.StatusOK, code)
	var ids []string
	for _, m := range list["models"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	require.Equal(t, []string{"acme-1", "acme-2"}, ids)
	code, out, errOut := cli(t, p, "acme", "", "models", "list", "--limit", "1", "--all")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, []string{"acme-1", "acme-2"}, firstColumn(out))

	code, _, errOut = cli(t, p, "acme", "", "models", "show", "globex-1")
	require.Equal(t, 1, code)
	require.Equal(t, `freshen models show: token "acme" is limited to the models whose id starts with "acme-"`+"\n"+
		"(the token is known, but may not do this)\n", errOut)
	code, _, errOut = cli(t, p, "", "", "models", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "(the server needs a token: set FRESHEN_TOKEN or --token)")

	// The refusals are in serve's log, with the token's name.
	waitFor(t, 5*time.Second, "the refusal in the log", func() bool {
		return strings.Contains(p.log.String(), `"token":"acme"`)
	})
	p.stop()
}

// firstColumn returns the first column of a table's rows, header left out.
func firstColumn(table string) []string {
	var col []string
	for i, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if f := strings.Fields(line); i > 0 && len(f) > 0 {
			col = append(col, f[0])
		}
	}
	return col
}

// TestE2EServeRefusesOpenAddress: without tokens, serve listens beyond
// loopback only with --insecure, and says so loudly.
func TestE2EServeRefusesOpenAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	port := freeAddr(t)[len("127.0.0.1:"):]
	p := e.start("open-test", "--addr", "0.0.0.0:"+port)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit")
	}
	require.Equal(t, 1, p.cmd.ProcessState.ExitCode(), p.log.String())
	require.Contains(t, p.log.String(), "freshen serve: --addr 0.0.0.0:"+port+": other hosts can reach it (it is no loopback address) and no tokens are set")

	p = e.start("open-test", "--addr", "0.0.0.0:"+port, "--insecure")
	p.base = "http://127.0.0.1:" + port
	waitFor(t, 30*time.Second, "serve to be ready", func() bool {
		resp, err := http.Get(p.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	require.Contains(t, p.log.String(), `"level":"ERROR","msg":"INSECURE: no tokens, and the API listens beyond this host`)
	code, _, _ := call(t, p, "GET", "/models", "", "")
	require.Equal(t, http.StatusOK, code)
	p.stop()
}

// scriptedWorker runs a Go worker on queue q whose handler fails the first
// attempt of a model named flaky-*, fails for good any attempt of broken-*,
// and succeeds the others.
func scriptedWorker(t *testing.T, e *env, q string) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	w, err := queue.NewWorker(e.rdb, queue.WorkerOptions{Prefix: e.prefix, Queue: q, Block: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)},
		func(ctx context.Context, job queue.Job) error {
			mu.Lock()
			seen[job.ModelID]++
			n := seen[job.ModelID]
			mu.Unlock()
			switch {
			case strings.HasPrefix(job.ModelID, "broken-"):
				return queue.UserMessage(queue.Permanent(queue.Fail("validation", "row 3: no date")), "Row 3 of your file has no date.")
			case strings.HasPrefix(job.ModelID, "flaky-") && n == 1:
				return queue.Fail("http_503", "upstream answered 503")
			}
			return nil
		})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// TestE2EModelsCLI runs every freshen models command against freshen serve.
func TestE2EModelsCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("cli-test", "--tokens", testTokens)
	scriptedWorker(t, e, "tables")
	c, err := refreshhttp.NewClient(p.base, "admin", nil)
	require.NoError(t, err)
	ctx := context.Background()
	get := func(id string) refreshhttp.ModelWithRuns {
		m, err := c.Get(ctx, id)
		require.NoError(t, err)
		return m
	}

	// put, from a file and from stdin. flaky-1's retry does not align with
	// its schedule: aligned, a failure within its timeout (an hour) of the
	// next 06:00 or 16:00 would wait for that run.
	file := filepath.Join(t.TempDir(), "flaky.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"queue": "tables", "payload": {"url": "s3://a"},
		"policy": {"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris",
		"retry": {"delays": ["0s"], "align": false}}}`), 0o600))
	code, out, errOut := cli(t, p, "admin", "", "models", "put", "flaky-1", "-f", file)
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "created flaky-1\n\n"), out)
	code, out, errOut = cli(t, p, "admin", `{"queue": "tables", "payload": {"url": "s3://b"}}`, "models", "put", "plain-1")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "created plain-1\n"), out)
	code, out, _ = cli(t, p, "admin", `{"queue": "tables"}`, "models", "put", "plain-1")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "replaced plain-1\n"), out)
	code, _, errOut = cli(t, p, "admin", `{"queue": "tables", "trigger": true}`, "models", "put", "broken-1")
	require.Equal(t, 0, code, errOut)

	// A refused body names the field and the rule.
	code, out, errOut = cli(t, p, "admin", `{"policy": {"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}}`,
		"models", "put", "bad-1")
	require.Equal(t, 2, code, "refused input")
	require.Empty(t, out)
	require.Equal(t, "freshen models put: policy.retry.backoff.multiplier: must be >= 1, got 0.5\n", errOut)

	// show: state, zone and UTC times of the next runs.
	code, out, errOut = cli(t, p, "admin", "", "models", "show", "flaky-1")
	require.Equal(t, 0, code, errOut)
	m := get("flaky-1")
	require.Len(t, m.NextRuns, 5)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	first := time.Time(m.NextRuns[0])
	require.Regexp(t, `(?m)^state\s+scheduled$`, out)
	require.Regexp(t, `(?m)^timezone\s+Europe/Paris$`, out)
	require.Regexp(t, `(?m)^NEXT RUNS \(Europe/Paris\)\s+UTC$`, out)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(first.In(paris).Format("2006-01-02 15:04:05 MST"))+`\s+`+
		regexp.QuoteMeta(first.UTC().Format("2006-01-02 15:04:05Z"))+`$`, out)
	require.Contains(t, []int{6, 16}, first.In(paris).Hour())

	// trigger: the first attempt fails, the retry succeeds.
	code, out, errOut = cli(t, p, "writer", "", "models", "trigger", "flaky-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^ID\s+CHANGED\s+STATE\s+NEXT RUN\s+WHY$`, out)
	require.Regexp(t, `(?m)^flaky-1\s+yes\s+`, out)
	waitFor(t, 30*time.Second, "flaky-1 to succeed after a retry", func() bool {
		return !time.Time(get("flaky-1").LastSuccessAt).IsZero()
	})
	waitFor(t, 30*time.Second, "broken-1 to be disabled", func() bool { return get("broken-1").Disabled })

	// history: the attempt log.
	code, out, errOut = cli(t, p, "reader", "", "models", "history", "flaky-1")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Regexp(t, `^NO\s+STARTED\s+DURATION\s+OUTCOME\s+KIND\s+MESSAGE\s+DECISION\s+NEXT$`, lines[0])
	require.Regexp(t, `^2\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T\s+\S+\s+success\s+-\s+-\s+-\s+next scheduled run$`, lines[1])
	require.Regexp(t, `^1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T\s+\S+\s+failure\s+http_503\s+upstream answered 503\s+retry\s+retry after 0s$`, lines[2])
	code, out, _ = cli(t, p, "reader", "", "models", "history", "flaky-1", "--json", "--limit", "1")
	require.Equal(t, 0, code)
	var hist refreshhttp.AttemptList
	require.NoError(t, json.Unmarshal([]byte(out), &hist))
	require.Len(t, hist.Attempts, 1)
	require.Equal(t, "success", string(hist.Attempts[0].Outcome))

	// show of a disabled model gives the customer-facing reason.
	code, out, _ = cli(t, p, "reader", "", "models", "show", "broken-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^state\s+disabled$`, out)
	require.Regexp(t, `(?m)^disabled reason\s+Row 3 of your file has no date\.$`, out)
	require.Regexp(t, `(?m)^last error\s+validation: row 3: no date \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\)$`, out)
	require.Contains(t, out, "next runs: none")

	// list: filters, pages, JSON.
	code, out, _ = cli(t, p, "reader", "", "models", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, `^ID\s+QUEUE\s+STATE\s+NEXT RUN\s+FAILURES\s+LAST SUCCESS\n`, out)
	require.Equal(t, []string{"broken-1", "flaky-1", "plain-1"}, firstColumn(out))
	require.Regexp(t, `(?m)^broken-1\s+tables\s+disabled\s+-\s+1\s+-$`, out)
	require.Regexp(t, `(?m)^plain-1\s+tables\s+idle\s+-\s+0\s+-$`, out)
	code, out, _ = cli(t, p, "reader", "", "models", "list", "--disabled")
	require.Equal(t, 0, code)
	require.Equal(t, []string{"broken-1"}, firstColumn(out))
	code, out, _ = cli(t, p, "reader", "", "models", "list", "--disabled=false", "--queue", "tables")
	require.Equal(t, 0, code)
	require.Equal(t, []string{"flaky-1", "plain-1"}, firstColumn(out))
	code, out, _ = cli(t, p, "reader", "", "models", "list", "--limit", "2")
	require.Equal(t, 0, code)
	require.Equal(t, []string{"broken-1", "flaky-1", "more:"}, firstColumn(out))
	require.Contains(t, out, "more: --after flaky-1 (or --all)")
	code, out, _ = cli(t, p, "reader", "", "models", "list", "--limit", "1", "--all", "--json")
	require.Equal(t, 0, code)
	var list refreshhttp.ModelList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list.Models, 3)
	require.Empty(t, list.Next)

	// patch from stdin.
	code, out, errOut = cli(t, p, "writer", `{"payload": {"url": "s3://c"}}`, "models", "patch", "plain-1")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "patched plain-1\n"), out)
	require.Regexp(t, `(?m)^payload\s+\{"url":\s*"s3://c"\}$`, out)

	// The actions, on several models at once; no-ops say so.
	code, out, errOut = cli(t, p, "writer", "", "models", "pause", "flaky-1", "plain-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^flaky-1\s+yes\s+paused\s`, out)
	require.Regexp(t, `(?m)^plain-1\s+yes\s+paused\s`, out)
	code, out, _ = cli(t, p, "writer", "", "models", "pause", "plain-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^plain-1\s+no\s+paused\s`, out)
	code, out, _ = cli(t, p, "writer", "", "models", "resume", "flaky-1", "plain-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^flaky-1\s+yes\s+scheduled\s`, out)
	code, out, _ = cli(t, p, "writer", "", "models", "cancel", "flaky-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^flaky-1\s+\w+\s+scheduled\s`, out)
	code, out, _ = cli(t, p, "writer", "", "models", "enable", "broken-1", "plain-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^broken-1\s+yes\s+idle\s`, out)
	require.Regexp(t, `(?m)^plain-1\s+no\s+idle\s`, out)
	require.False(t, get("broken-1").Disabled)
	code, out, errOut = cli(t, p, "writer", "", "models", "trigger", "plain-1", "nope-1", "--json")
	require.Equal(t, 1, code, "one of the models does not exist")
	require.Equal(t, "freshen models trigger: nope-1: model \"nope-1\" not found\n", errOut)
	var acts []refreshhttp.ActResult
	require.NoError(t, json.Unmarshal([]byte(out), &acts))
	require.Len(t, acts, 2, "the result, then the error")
	require.True(t, acts[0].Changed)
	require.Contains(t, out, `"error": "model \"nope-1\" not found"`)

	// delete needs admin.
	code, _, errOut = cli(t, p, "writer", "", "models", "delete", "plain-1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "needs scope admin")
	code, out, errOut = cli(t, p, "admin", "", "models", "delete", "plain-1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "deleted plain-1\n", out)
	code, _, errOut = cli(t, p, "admin", "", "models", "show", "plain-1")
	require.Equal(t, 1, code)
	require.Equal(t, "freshen models show: model \"plain-1\" not found\n", errOut)

	// Usage errors.
	code, _, errOut = cli(t, p, "admin", "", "models", "show")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "usage: freshen models show [flags] ID")
	code, _, errOut = cli(t, p, "admin", "", "models", "show", "a", "b")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unexpected argument "b"`)
	p.stop()
}

// TestE2EDeadCLI lists, requeues and drops dead letters through freshen
// serve: a requeued outcome is applied, a requeued job is run.
func TestE2EDeadCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("dead-test", "--tokens", testTokens)
	ctx := context.Background()
	c, err := refreshhttp.NewClient(p.base, "admin", nil)
	require.NoError(t, err)

	// Two models started, their jobs taken off the lists as a worker
	// would, then set aside as a store refusal (the outcome of m1) and a
	// worker's refusal (the job of m2) would be.
	takeJob := func(id, q string) (raw string, uid string) {
		_, _, err := c.Put(ctx, id, []byte(`{"queue": "`+q+`", "trigger": true}`))
		require.NoError(t, err)
		res, err := e.rdb.BRPop(ctx, 30*time.Second, e.key("jobs:"+q)).Result()
		require.NoError(t, err)
		var job struct {
			AttemptUID string `json:"attempt_uid"`
		}
		require.NoError(t, json.Unmarshal([]byte(res[1]), &job))
		return res[1], job.AttemptUID
	}
	_, uid1 := takeJob("m1", "q1")
	job2, _ := takeJob("m2", "q2")
	entry := func(reason, message string) string {
		b, err := json.Marshal(map[string]any{"reason": reason, "message": message, "at": time.Now().UTC()})
		require.NoError(t, err)
		return string(b)
	}
	outcome := `{"model_id":"m1","attempt_uid":"` + uid1 + `","outcome":"success"}`
	require.NoError(t, e.rdb.LPush(ctx, e.key("dead"),
		entry("the store refused it: canceling statement due to lock timeout", outcome),
		entry(`job: started_at: must be an RFC 3339 time, got 5`, job2)).Err())
	// And a malformed outcome, which serve sets aside itself.
	require.NoError(t, e.rdb.LPush(ctx, e.key("outcomes"), `[]`).Err())
	waitFor(t, 30*time.Second, "serve to set the malformed outcome aside", func() bool {
		return e.rdb.LLen(ctx, e.key("dead")).Val() == 3
	})

	// list needs admin, without a prefix.
	code, _, errOut := cli(t, p, "reader", "", "dead", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `token "reader" has scope read; GET /dead needs scope admin`)
	code, _, errOut = cli(t, p, "acme", "", "dead", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `GET /dead needs a token without a prefix`)

	code, out, errOut := cli(t, p, "admin", "", "dead", "list")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `^ID\s+AT\s+LIST\s+REASON\s+MESSAGE$`, lines[0])
	require.Regexp(t, `^[0-9a-f]{16}\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+outcomes\s+must be a JSON object, got an array\s+\[\]$`, lines[1])
	require.Regexp(t, `^[0-9a-f]{16}\s+\S+ \S+\s+jobs:q2\s+job: started_at: must be an RFC 3339 time, got 5\s+\{"model_id":"m2"`, lines[2])
	require.Regexp(t, `^[0-9a-f]{16}\s+\S+ \S+\s+outcomes\s+the store refused it: canceling statement due to lock timeo…\s+\{"model_id":"m1"`, lines[3])
	ids := firstColumn(out)

	code, out, _ = cli(t, p, "admin", "", "dead", "list", "--limit", "2", "--all", "--json")
	require.Equal(t, 0, code)
	var list refreshhttp.DeadList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list.Dead, 3)
	require.Equal(t, ids[0], list.Dead[0].ID)
	require.Equal(t, "[]", list.Dead[0].Message)

	// requeue the outcome and the job: the outcome is applied, the job is
	// run by a worker.
	code, out, errOut = cli(t, p, "admin", "", "dead", "requeue", ids[2], ids[1])
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "requeued 2\n", out)
	waitFor(t, 30*time.Second, "the requeued outcome to be applied", func() bool {
		m, err := c.Get(ctx, "m1")
		require.NoError(t, err)
		return !time.Time(m.LastSuccessAt).IsZero()
	})
	scriptedWorker(t, e, "q2")
	waitFor(t, 30*time.Second, "the requeued job to run", func() bool {
		m, err := c.Get(ctx, "m2")
		require.NoError(t, err)
		return !time.Time(m.LastSuccessAt).IsZero()
	})
	hist, err := c.Attempts(ctx, "m1", "", 10)
	require.NoError(t, err)
	require.Len(t, hist.Attempts, 1)
	require.Equal(t, "success", string(hist.Attempts[0].Outcome))

	// Requeued entries are gone; asking again says so.
	code, out, _ = cli(t, p, "admin", "", "dead", "requeue", ids[2])
	require.Equal(t, 1, code)
	require.Equal(t, "requeued 0\nnot on the list: "+ids[2]+"\n", out)

	// drop the malformed one.
	code, out, errOut = cli(t, p, "admin", "", "dead", "drop", ids[0])
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "dropped 1\n", out)
	code, out, _ = cli(t, p, "admin", "", "dead", "list", "--json")
	require.Equal(t, 0, code)
	require.JSONEq(t, `{"dead": [], "next": ""}`, out)
	code, out, _ = cli(t, p, "admin", "", "dead", "drop", "--all")
	require.Equal(t, 0, code)
	require.Equal(t, "dropped 0\n", out)

	code, _, errOut = cli(t, p, "admin", "", "dead", "requeue")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "give dead-letter ids or --all")
	p.stop()
}

// TestE2EModelsShowExtensions: show prints the state of the extensions
// that apply: a model whose upstream is disabled says so in the customer's
// words, a missing upstream shows as missing, an overdue model shows since
// when; --json carries the API's fields; a model without extensions prints
// none of them.
func TestE2EModelsShowExtensions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("show-test", "--tokens", testTokens)
	scriptedWorker(t, e, "tables")
	c, err := refreshhttp.NewClient(p.base, "admin", nil)
	require.NoError(t, err)
	ctx := context.Background()
	put := func(id, body string) {
		t.Helper()
		_, _, err := c.Put(ctx, id, []byte(body))
		require.NoError(t, err, id)
	}
	get := func(id string) refreshhttp.ModelWithRuns {
		t.Helper()
		m, err := c.Get(ctx, id)
		require.NoError(t, err)
		return m
	}
	put("broken-orders", `{"queue": "tables", "trigger": true}`)
	waitFor(t, 30*time.Second, "broken-orders to be disabled", func() bool { return get("broken-orders").Disabled })
	put("plain-1", `{"queue": "tables", "trigger": true}`)
	waitFor(t, 30*time.Second, "plain-1 to succeed", func() bool { return !time.Time(get("plain-1").LastSuccessAt).IsZero() })
	put("report-1", `{"queue": "reports", "upstreams": ["broken-orders", "plain-1", "ghost-1"]}`)
	put("late-1", `{"queue": "reports", "policy": {"max_age": "1s"}}`)
	waitFor(t, 30*time.Second, "late-1 to be overdue", func() bool { return !time.Time(get("late-1").OverdueSince).IsZero() })

	// The upstreams, each with its status, and the sentence of the API.
	code, out, errOut := cli(t, p, "reader", "", "models", "show", "report-1")
	require.Equal(t, 0, code, errOut)
	m := get("report-1")
	require.NotEmpty(t, m.WaitingFor)
	require.Regexp(t, `(?m)^waiting\s+`+regexp.QuoteMeta(string(m.WaitingFor))+`$`, out)
	require.Contains(t, string(m.WaitingFor), "waiting for broken-orders, whose refresh is disabled: Row 3 of your file has no date.")
	require.Regexp(t, `(?m)^upstreams\s+broken-orders\s+disabled: Row 3 of your file has no date\.$`, out)
	require.Regexp(t, `(?m)^\s+plain-1\s+changed \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$`, out)
	require.Regexp(t, `(?m)^\s+ghost-1\s+missing \(no model has this id\)$`, out)
	require.Regexp(t, `(?m)^state\s+idle$`, out)
	require.NotContains(t, out, "overdue")

	// An overdue model says since when.
	code, out, errOut = cli(t, p, "reader", "", "models", "show", "late-1")
	require.Equal(t, 0, code, errOut)
	late := get("late-1")
	require.Regexp(t, `(?m)^overdue since\s+`+regexp.QuoteMeta(formatTime(late.OverdueSince, time.UTC))+` \(older than its max_age of 1s\)$`, out)
	require.Equal(t, time.Time(late.CreatedAt).Add(time.Second).Truncate(time.Second), time.Time(late.OverdueSince).Truncate(time.Second),
		"overdue max_age after its creation")
	require.NotContains(t, out, "upstreams")

	// A model without extensions prints none of their rows.
	code, out, errOut = cli(t, p, "reader", "", "models", "show", "plain-1")
	require.Equal(t, 0, code, errOut)
	for _, key := range []string{"upstreams", "waiting", "overdue", "debounce", "snoozed", "spread", "last changed"} {
		require.NotRegexp(t, `(?m)^`+key, out, key)
	}

	// --json is the API's answer, with the fields of the extensions.
	code, out, errOut = cli(t, p, "reader", "", "models", "show", "report-1", "--json")
	require.Equal(t, 0, code, errOut)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	for _, field := range []string{"upstreams", "upstreams_mode", "state", "waiting_for_slot", "overdue_since", "overdue_at",
		"debounce_at", "snoozed_since", "last_changed_at", "upstream_status", "waiting_for"} {
		require.Contains(t, raw, field)
	}
	var shown refreshhttp.ModelWithRuns
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	require.Equal(t, m.UpstreamStatus, shown.UpstreamStatus)
	require.Equal(t, []string{"disabled", "changed", "missing"}, []string{shown.UpstreamStatus[0].Status,
		shown.UpstreamStatus[1].Status, shown.UpstreamStatus[2].Status})
	require.Equal(t, m.WaitingFor, shown.WaitingFor)
	p.stop()
}
