package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// memoryAPI returns the URL of an API over store, with limits lim, whose
// clock stands at now.
func memoryAPI(t *testing.T, store *memory.Store, now time.Time, lim refresh.Limits) string {
	t.Helper()
	svc := &refresh.Service{Store: store, Clock: refresh.NewVirtualClock(now), Limits: lim}
	srv := httptest.NewServer(refreshhttp.NewServer(svc))
	t.Cleanup(srv.Close)
	return srv.URL
}

// virtualServer returns the URL of an API over an empty memory store whose
// clock stands at now, far from the machine's clock.
func virtualServer(t *testing.T, now time.Time) string {
	t.Helper()
	return memoryAPI(t, memory.NewStore(), now, refresh.DefaultLimits())
}

// runCLI runs a freshen command against the API at url.
func runCLI(t *testing.T, url, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(args, "--server", url), strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestModelsStateFromAPI: every command that prints a model's state prints
// the state the API computed, never one read from the machine's clock: a
// model whose next run lies in the past of the machine but in the future
// of the server is scheduled, not due.
func TestModelsStateFromAPI(t *testing.T) {
	t.Parallel()
	url := virtualServer(t, time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC))
	const body = `{"queue": "tables", "policy": {"schedule": "FREQ=HOURLY", "timezone": "Europe/Paris"}}`

	code, out, errOut := runCLI(t, url, body, "models", "put", "hourly-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^state\s+scheduled$`, out)
	code, out, errOut = runCLI(t, url, `{"payload": {"v": 2}}`, "models", "patch", "hourly-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^state\s+scheduled$`, out)
	code, out, _ = runCLI(t, url, "", "models", "show", "hourly-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^state\s+scheduled$`, out)
	code, out, _ = runCLI(t, url, "", "models", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^hourly-1\s+tables\s+scheduled\s+2026-03-02 07:00:00 CET\s`, out)

	// The actions: the state, and the why in the zone of the NEXT RUN.
	code, out, _ = runCLI(t, url, "", "models", "pause", "hourly-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^hourly-1\s+yes\s+paused\s`, out)
	code, out, _ = runCLI(t, url, "", "models", "resume", "hourly-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^hourly-1\s+yes\s+scheduled\s+2026-03-02 07:00:00 CET\s+resumed; next run 2026-03-02 07:00:00 CET$`, out)

	// An on-demand model that is triggered and cancelled has nothing
	// planned.
	code, _, errOut = runCLI(t, url, `{"queue": "thumbnails", "trigger": true}`, "models", "put", "thumb-1")
	require.Equal(t, 0, code, errOut)
	code, out, _ = runCLI(t, url, "", "models", "list", "--queue", "thumbnails")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^thumb-1\s+thumbnails\s+scheduled\s+2026-03-02 05:30:00Z\s`, out)
	code, out, _ = runCLI(t, url, "", "models", "cancel", "thumb-1")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^thumb-1\s+yes\s+idle\s+-\s+cancelled; nothing planned$`, out)
	require.NotContains(t, out, "null")
}

// TestModelsExitStatus: input the server refuses exits 2, as input the
// command refuses itself; other failures exit 1; with --json the error is
// printed as the API writes it.
func TestModelsExitStatus(t *testing.T) {
	t.Parallel()
	url := virtualServer(t, time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC))

	bad := `{"policy": {"timeout": "soon", "retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}}`
	code, out, errOut := runCLI(t, url, bad, "models", "put", "bad-1")
	require.Equal(t, 2, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "policy.retry.backoff.multiplier: must be >= 1, got 0.5")
	code, out, _ = runCLI(t, url, bad, "models", "put", "bad-1", "--json")
	require.Equal(t, 2, code)
	var apiErr struct {
		Error  string               `json:"error"`
		Fields []refresh.FieldError `json:"fields"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &apiErr), out)
	require.Contains(t, apiErr.Error, "policy.timeout")
	var fields []string
	for _, f := range apiErr.Fields {
		fields = append(fields, f.Field)
	}
	require.Equal(t, []string{"policy.timeout", "policy.retry.backoff.multiplier"}, fields)

	code, _, errOut = runCLI(t, url, `{"policy": {"timeout": "soon"}}`, "models", "patch", "nope-1")
	require.Equal(t, 1, code, "not found is not refused input: %s", errOut)
	code, out, _ = runCLI(t, url, "", "models", "show", "nope-1", "--json")
	require.Equal(t, 1, code)
	require.JSONEq(t, `{"error": "model \"nope-1\" not found"}`, out)

	// Several ids: each answer, or its error with the id.
	code, _, errOut = runCLI(t, url, `{}`, "models", "put", "ok-1")
	require.Equal(t, 0, code, errOut)
	code, out, _ = runCLI(t, url, "", "models", "trigger", "ok-1", "nope-1", "--json")
	require.Equal(t, 1, code)
	var answers []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &answers), out)
	require.Len(t, answers, 2)
	require.Equal(t, true, answers[0]["changed"])
	require.Equal(t, map[string]any{"id": "nope-1", "error": `model "nope-1" not found`}, answers[1])
	code, _, _ = runCLI(t, url, "", "models", "trigger", "ok-1", "-bad-", "--json")
	require.Equal(t, 2, code, "an id the server refuses")

	// A bulk action without a selector names the flag, not the API's field.
	code, out, errOut = runCLI(t, url, "", "models", "cancel", "--dry-run")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "--all")
	require.NotContains(t, errOut, "all: true")
	code, out, errOut = runCLI(t, url, "", "models", "cancel", "--dry-run", "--all")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "dry run: 1 model(s) matched, cancel would change 1; nothing changed\n", out)

	// A bulk selector the server refuses.
	code, _, errOut = runCLI(t, url, "", "models", "pause", "--state", "sleepy")
	require.Equal(t, 2, code, errOut)
	require.Regexp(t, regexp.MustCompile(`state`), errOut)
}

// TestNextPlan: history says what each end of an attempt planned; a
// success whose data did not change plans the next scheduled run as any
// success does.
func TestNextPlan(t *testing.T) {
	t.Parallel()
	delay := refresh.Duration(time.Minute)
	for _, tt := range []struct {
		a         refreshhttp.Attempt
		scheduled bool
		want      string
	}{
		{refreshhttp.Attempt{Outcome: "success"}, true, "next scheduled run"},
		{refreshhttp.Attempt{Outcome: "unchanged"}, true, "next scheduled run"},
		{refreshhttp.Attempt{Outcome: "unchanged"}, false, "-"},
		{refreshhttp.Attempt{Outcome: "snoozed"}, true, "-"},
		{refreshhttp.Attempt{Outcome: "failure", Decision: refresh.DecisionRetry, Delay: &delay}, true, "retry after 1m0s"},
	} {
		require.Equal(t, tt.want, nextPlan(tt.a, tt.scheduled), "%+v", tt.a)
	}
}
