package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	// 12 virtual hours from 05:55 in Paris, in about a second.
	code := run(context.Background(), []string{"demo", "--duration", "PT12H", "--speed", "43200", "--seed", "3"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	out := stdout.String()
	require.Contains(t, out, "freshen demo: 12h of virtual time from Mon 05:55 Paris")
	require.Contains(t, out, "\nMon 05:55 Paris  bigtable-1   created    first run Mon 06:00 Paris\n")
	require.Contains(t, out, "bigtable-1   start      attempt 1\n")
	require.Contains(t, out, "cache-1      start      attempt 1\n")
	require.Contains(t, out, "thumbnail-1  trigger    edited → refresh now\n")
	require.Contains(t, out, "\nSummary: 12h of virtual time in ")
	require.Regexp(t, `\d+ starts?, \d+ success(es)?, \d+ failures? \(\d+ timeouts?\), \d+ retr(y|ies), \d+ disables?, \d+ stale outcomes?`, out)
	require.Contains(t, out, "  model         starts  successes  failures  retries  disables\n")
	require.NotRegexp(t, `\nTue `, out, "no event after the end")
}

func TestDemoFlags(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--speed 0":         "--speed: must be > 0, got 0",
		"--duration 0s":     "--duration: must be > 0, got 0s",
		"--duration soon":   `invalid value "soon" for flag -duration`,
		"--fail-rate 1.5":   "--fail-rate: must be between 0 and 1, got 1.5",
		"--edit-every -1m":  "--edit-every: must be > 0, got -1m",
		"--start yesterday": `invalid value "yesterday" for flag -start`,
		"extra":             `unexpected argument "extra"`,
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"demo"}, strings.Fields(args)...), nil, &stdout, &stderr)
		require.Equal(t, 2, code, args)
		require.Contains(t, stderr.String(), want, args)
		require.Empty(t, stdout.String(), args)
	}
}

// TestDemoServesTheAPI: with --addr, the banner says that the API and the
// dashboard keep serving after the story; they do, after the summary,
// until the context ends (Ctrl-C).
func TestDemoServesTheAPI(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--duration", "1h", "--speed", "36000", "--addr", "127.0.0.1:0"}, nil, &stdout, &stderr)
	}()
	waitFor(t, 30*time.Second, "the end of the story", func() bool { return strings.Contains(stdout.String(), "The story is over.") })
	out := stdout.String()
	addr := regexp.MustCompile(`HTTP API on http://(127\.0\.0\.1:\d+) \(try GET /models\)`).FindStringSubmatch(out)
	require.NotNil(t, addr, out)
	require.Contains(t, out, "Both keep serving after the story, at real speed, until Ctrl-C.\n")
	require.Less(t, strings.Index(out, "\nSummary: 1h of virtual time in "), strings.Index(out, "The story is over."), "the summary comes first")
	require.Contains(t, out, "Ctrl-C stops the demo.")

	// The story is over, and the API still answers.
	res, err := http.Get("http://" + addr[1] + "/models/bigtable-1")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var m refreshhttp.ModelWithRuns
	require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
	require.Equal(t, "bigtable-1", m.ID)
	select {
	case code := <-done:
		t.Fatalf("the demo ended (status %d) before Ctrl-C", code)
	default:
	}

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not end after Ctrl-C")
	}
	_, err = http.Get("http://" + addr[1] + "/models")
	require.Error(t, err, "the API is closed")
}

// TestDemoViewLateness: the view says when a start comes later than
// lateBound after its plan, once as it happens with a slower speed to try,
// and in the summary; a start within the bound says nothing. A stale
// outcome is called so everywhere.
func TestDemoViewLateness(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	start := demoStart
	v := newDemoView(&out, start.Add(24*time.Hour), 7200)
	six := start.Add(5 * time.Minute)
	v.add([]refresh.Event{
		{At: start, ModelID: "bigtable-1", Type: refresh.EventCreate, RefreshAt: six},
		{At: start, ModelID: "cache-1", Type: refresh.EventCreate, RefreshAt: six},
		{At: six.Add(time.Minute), ModelID: "cache-1", Type: refresh.EventStart, AttemptNo: 1, AttemptUID: "c1"},
		{At: six.Add(9 * time.Minute), ModelID: "bigtable-1", Type: refresh.EventStart, AttemptNo: 1, AttemptUID: "b1"},
		{At: six.Add(10 * time.Minute), ModelID: "cache-1", Type: refresh.EventStale, Kind: "http_503", Message: "late"},
	})
	v.close()
	require.Equal(t, 1, v.late.starts)
	require.Equal(t, 9*time.Minute, v.late.worst)
	text := out.String()
	require.Contains(t, text, "Mon 06:09 Paris  bigtable-1   start      attempt 1\n"+
		"(the demo falls behind its clock: this start came 9m after its planned Mon 06:00 Paris; this host\n"+
		" cannot keep up with --speed 7200: try --speed 1600)\n")
	require.Equal(t, 1, strings.Count(text, "falls behind"), "the cache's start a minute late says nothing")
	require.Contains(t, text, "cache-1      stale      stale outcome ignored (http_503: late)\n")

	v.summary(24*time.Hour, time.Second, nil)
	require.Contains(t, out.String(), "  The demo fell behind its clock: 1 start came more than 2m late (at most 9m);\n"+
		"  this host cannot keep up with --speed 7200: try --speed 1600.\n")
	require.Contains(t, out.String(), "1 stale outcome\n")
}

func TestDemoEndsEarlyOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"demo"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "\nSummary: ")
}
