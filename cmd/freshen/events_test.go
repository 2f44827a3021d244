package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/webhook"
)

func TestServeEventsFlag(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://plain/db")
	t.Setenv("REDIS_URL", "redis://plain:6379/0")

	m := NewMain(io.Discard)
	require.NoError(t, m.ParseFlags(nil))
	require.Equal(t, refresh.EventNames{}, m.Config.Events, "all names by default")

	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--events=-started,-succeeded"}))
	require.False(t, m.Config.Events.Has(refresh.LifecycleStarted))
	require.True(t, m.Config.Events.Has(refresh.LifecycleFailed))

	t.Setenv("FRESHEN_EVENTS", "disabled,enabled")
	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags(nil))
	require.Equal(t, "disabled,enabled", m.Config.Events.String(), "from FRESHEN_EVENTS")
	t.Setenv("FRESHEN_EVENTS", "")

	for args, want := range map[string]string{
		"--events strated":         `--events: must be all, none, or names separated by commas, each one of create, update, started,`,
		"--events failed,-started": `--events: must not mix names and -names (every name but some), got "failed,-started"`,
	} {
		err := NewMain(io.Discard).ParseFlags(strings.Fields(args))
		require.ErrorContains(t, err, want, args)
	}
}

// TestServeEventsWebhookAddsNames runs freshen serve with
// --events=-started,-succeeded and a webhook endpoint that takes
// succeeded: the endpoint gets the success of a model, and the events
// stream carries neither started nor succeeded.
func TestServeEventsWebhookAddsNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := &webhookReceiver{sent: map[string]int{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	hooks, err := json.Marshal([]webhook.Endpoint{{Name: "crm", URL: srv.URL + "/hooks", Secret: webhookSecret,
		Events: []string{refresh.LifecycleSucceeded}}})
	require.NoError(t, err)
	p := e.serve("ev", "--events=-started,-succeeded", "--webhooks", string(hooks),
		"--webhook-backoff", "100ms", "--webhook-max-backoff", "200ms", "--webhook-allow-private")

	worker, err := queue.NewWorker(e.rdb, queue.WorkerOptions{Prefix: e.prefix, Queue: "ev", Block: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
		func(context.Context, queue.Job) error { return nil })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	code, res := request(t, "PUT", p.base+"/models/ev-1", `{"queue": "ev", "trigger": true}`)
	require.Equal(t, http.StatusCreated, code, res)
	waitFor(t, 30*time.Second, "the succeeded webhook", func() bool { return len(rcv.payloads()) == 1 })
	got := rcv.payloads()[0]
	require.Equal(t, "crm succeeded ev-1", got.Endpoint+" "+got.Type+" "+got.ModelID)

	// The success's deliveries were written as its pass took the events
	// and published them: the stream holds all it will.
	stream := e.prefix + ":{" + e.prefix + "}:events"
	entries, err := e.rdb.XRange(context.Background(), stream, "-", "+").Result()
	require.NoError(t, err)
	var types []string
	for _, en := range entries {
		types = append(types, en.Values["type"].(string))
	}
	require.Equal(t, []string{"create"}, types, "no started nor succeeded entry")
	require.Zero(t, e.count(`SELECT count(*) FROM outbox`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM attempts WHERE model_id = 'ev-1' AND outcome = 'success'`), "the history is written")
}
