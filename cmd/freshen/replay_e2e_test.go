package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// TestE2EReplay records a real history with freshen serve on PostgreSQL and
// Redis: an on-demand model whose worker always answers 503 is disabled
// after its third attempt (two retries). Replayed through the API with a
// read token under a policy of one retry, the same failures disable it
// after its second attempt, earlier.
func TestE2EReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("replay-test", "--tokens", testTokens)
	w, err := queue.NewWorker(e.rdb, queue.WorkerOptions{Prefix: e.prefix, Queue: "etl", Block: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)},
		func(context.Context, queue.Job) error { return queue.Fail("http_503", "upstream answered 503") })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	admin, err := refreshhttp.NewClient(p.base, "admin", nil)
	require.NoError(t, err)
	_, _, err = admin.Put(context.Background(), "etl-1", []byte(`{"queue": "etl", "trigger": true,
		"policy": {"timeout": "1m", "retry": {"delays": ["0s", "0s"]}}}`))
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "etl-1 to be disabled", func() bool {
		m, err := admin.Get(context.Background(), "etl-1")
		return err == nil && m.Disabled
	})

	policy := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"timeout": "1m", "retry": {"delays": ["0s"]}}`), 0o644))
	code, stdout, stderr := cli(t, p, "reader", "", "simulate", "--model", "etl-1", "--policy", policy, "--since", "P1D")
	require.Equal(t, 0, code, stderr)
	var out struct {
		CoveredBy string `json:"covered_by"`
		Summary   struct {
			Recorded, Replayed struct {
				Attempts, Retries int
				Disabled          []time.Time
			}
		}
		Recorded, Replayed []struct {
			Event, Kind, Decision string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	require.Equal(t, "creation", out.CoveredBy)
	rec, rep := out.Summary.Recorded, out.Summary.Replayed
	require.Equal(t, 3, rec.Attempts, stdout)
	require.Equal(t, 2, rec.Retries)
	require.Len(t, rec.Disabled, 1)
	require.Equal(t, 2, rep.Attempts, stdout)
	require.Equal(t, 1, rep.Retries)
	require.Len(t, rep.Disabled, 1)
	require.False(t, rep.Disabled[0].After(rec.Disabled[0]), "disabled no later than it was")
	last := out.Replayed[len(out.Replayed)-1]
	require.Equal(t, []string{"failure", "http_503", "disable"}, []string{last.Event, last.Kind, last.Decision})

	// Another customer's token may not read the model.
	code, _, stderr = cli(t, p, "acme", "", "simulate", "--model", "etl-1", "--policy", policy)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "(the token is known, but may not do this)")
}
