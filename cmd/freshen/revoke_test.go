package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
)

// TestE2ERevoked checks that Go workers learn that their attempt is over
// without an outcome. A job whose attempt was cancelled before any worker
// took it is dropped unrun: after cancel then trigger, exactly one job of
// the model runs, the new one. A running handler has its context cancelled
// within a second of a trigger, a cancel or a DELETE, with a cause that
// says which.
func TestE2ERevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	p := e.serve("revoke")
	get := func(id string) map[string]any {
		code, m := request(t, "GET", p.base+"/models/"+id, "")
		require.Equal(t, http.StatusOK, code, m)
		return m
	}
	post := func(id, action string) {
		code, m := request(t, "POST", p.base+"/models/"+id+"/"+action, "")
		require.Equal(t, http.StatusOK, code, m)
		require.Equal(t, true, m["changed"], m)
	}
	// started waits for the model to run an attempt other than not, and
	// returns its uid.
	started := func(id, not string) string {
		var uid string
		waitFor(t, 10*time.Second, "an attempt of "+id+" to start", func() bool {
			uid, _ = get(id)["attempt_uid"].(string)
			return uid != "" && uid != not
		})
		return uid
	}
	llen := func(k string) int64 {
		n, err := e.rdb.LLen(ctx, e.key(k)).Result()
		require.NoError(t, err)
		return n
	}

	t.Run("dropped unrun", func(t *testing.T) {
		code, m := request(t, "PUT", p.base+"/models/idle", `{"queue": "later", "trigger": true}`)
		require.Equal(t, http.StatusCreated, code, m)
		cancelled := started("idle", "")
		post("idle", "cancel")
		// No worker runs yet: the job waits in the queue, revoked.
		waitFor(t, 10*time.Second, "the cancelled attempt to be revoked", func() bool {
			reason, _ := e.rdb.Get(ctx, e.key("revoked:"+cancelled)).Result()
			return reason == "cancelled"
		})
		post("idle", "trigger")
		next := started("idle", cancelled)
		require.EqualValues(t, 2, llen("jobs:later"), "both jobs wait in the queue")

		var mu sync.Mutex
		var ran []string
		w := e.runWorker(t, "later", 2, func(ctx context.Context, job queue.Job) error {
			mu.Lock()
			ran = append(ran, job.AttemptUID)
			mu.Unlock()
			return nil
		})
		waitFor(t, 10*time.Second, "the new attempt to succeed and the revoked job to be dropped", func() bool {
			return get("idle")["last_success_at"] != nil && w.Stats().Revoked == 1 && llen("jobs:later") == 0
		})
		mu.Lock()
		require.Equal(t, []string{next}, ran, "the jobs that ran")
		mu.Unlock()
		require.EqualValues(t, 1, w.Stats().Taken-w.Stats().Revoked)
	})

	t.Run("cancelled while running", func(t *testing.T) {
		type end struct {
			uid   string
			cause error
			at    time.Time
		}
		running := make(chan string, 10)
		ended := make(chan end, 10)
		testEnded := make(chan struct{})
		e.runWorker(t, "blocking", 2, func(ctx context.Context, job queue.Job) error {
			running <- job.AttemptUID
			select {
			case <-ctx.Done():
			case <-testEnded: // the test failed: let the worker stop
				return nil
			}
			ended <- end{job.AttemptUID, context.Cause(ctx), time.Now()}
			return context.Cause(ctx)
		})
		t.Cleanup(func() { close(testEnded) })
		code, m := request(t, "PUT", p.base+"/models/busy", `{"queue": "blocking", "trigger": true}`)
		require.Equal(t, http.StatusCreated, code, m)
		uid := ""
		for _, tt := range []struct {
			action string // a POST, or DELETE
			cause  error
		}{
			{"trigger", queue.ErrSuperseded},
			{"cancel", queue.ErrCancelled},
			{"trigger", nil}, // the cancelled model was idle: it starts again
			{"DELETE", queue.ErrDeleted},
		} {
			if uid == "" && tt.cause != nil {
				select {
				case uid = <-running:
				case <-time.After(10 * time.Second):
					t.Fatal("no job started")
				}
			}
			at := time.Now()
			if tt.action == "DELETE" {
				req, err := http.NewRequest("DELETE", p.base+"/models/busy", nil)
				require.NoError(t, err)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusNoContent, resp.StatusCode)
			} else {
				post("busy", tt.action)
			}
			if tt.cause == nil {
				continue
			}
			var got end
			select {
			case got = <-ended:
			case <-time.After(5 * time.Second):
				t.Fatalf("the handler of %s still runs 5s after %s", uid, tt.action)
			}
			took := got.at.Sub(at)
			t.Logf("%s: the handler's context ended %s after the request, cause %q", tt.action, took.Round(time.Millisecond), got.cause)
			require.Equal(t, uid, got.uid)
			require.ErrorIs(t, got.cause, tt.cause)
			require.ErrorIs(t, got.cause, queue.ErrRevoked)
			require.Less(t, took, time.Second, "%s: the handler's context ended too late", tt.action)
			uid = ""
		}
		select {
		case uid := <-running:
			t.Fatalf("attempt %s of a deleted model runs", uid)
		default:
		}
	})
	p.stop()
}

// runWorker runs a queue.Worker of queue q on the test's Redis until t
// ends.
func (e *env) runWorker(t *testing.T, q string, concurrency int, h queue.Handler) *queue.Worker {
	t.Helper()
	w, err := queue.NewWorker(e.rdb, queue.WorkerOptions{
		Prefix: e.prefix, Queue: q, Concurrency: concurrency, Block: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}, h)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "worker of %s", q)
	})
	return w
}
