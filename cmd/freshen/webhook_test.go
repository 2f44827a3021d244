package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/webhook"
)

// webhookSecret is the secret of the endpoints of these tests.
const webhookSecret = "s3cr3t-webhook-signing-key"

func TestWebhookFlags(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://plain/db")
	t.Setenv("REDIS_URL", "redis://plain:6379/0")
	file := filepath.Join(t.TempDir(), "webhooks.json")
	require.NoError(t, os.WriteFile(file, []byte(`[{"name": "crm", "url": "https://crm.example.com/hooks", "secret": "`+webhookSecret+`",
		"events": ["disabled", "enabled"], "prefix": "acme-"}]`), 0o600))

	m := NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--webhooks-file", file, "--webhooks",
		`[{"name": "ops", "url": "http://ops.internal/freshen", "secret": "another-secret-of-16", "events": ["freshness_lost"]}]`,
		"--webhook-timeout", "PT5S", "--webhook-max-attempts", "3"}))
	w := m.Config.Webhook
	require.Equal(t, []webhook.Endpoint{
		{Name: "crm", URL: "https://crm.example.com/hooks", Secret: webhookSecret, Events: []string{"disabled", "enabled"}, Prefix: "acme-"},
		{Name: "ops", URL: "http://ops.internal/freshen", Secret: "another-secret-of-16", Events: []string{"freshness_lost"}},
	}, w.Endpoints, "the file's endpoints, then those of --webhooks")
	require.Equal(t, 5*time.Second, w.Timeout)
	require.Equal(t, 3, w.MaxAttempts)
	require.Equal(t, defaultWebhookConfig().MaxAge, w.MaxAge)

	valid := `{"name": "crm", "url": "https://crm.example.com/hooks", "secret": "` + webhookSecret + `", "events": ["disabled"]}`
	for _, tc := range []struct {
		name, text string
		args       []string
		want       string
	}{
		{name: "not JSON", text: `[{"name": `, want: "--webhooks: unexpected EOF"},
		{name: "bad syntax", text: `[{"name" "crm"}]`, want: "--webhooks: invalid JSON at byte 10"},
		{name: "unknown field", text: `[{"name": "crm", "secrt": "x"}]`, want: `--webhooks: json: unknown field "secrt"`},
		{name: "wrong type", text: `[{"name": "crm", "events": "disabled"}]`, want: "--webhooks: webhooks[].events: must be an array, got string"},
		{name: "no name", text: `[{"url": "https://x.example", "secret": "` + webhookSecret + `", "events": ["disabled"]}]`, want: "--webhooks: webhooks[0].name: must be set"},
		{name: "bad url", text: `[` + strings.Replace(valid, "https://crm.example.com/hooks", "crm.example.com", 1) + `]`,
			want: `--webhooks: webhooks[0].url: must be an absolute http or https URL, got "crm.example.com"`},
		{name: "short secret", text: `[` + strings.Replace(valid, webhookSecret, "short", 1) + `]`,
			want: "--webhooks: webhooks[0].secret: must be at least 16 characters, got 5"},
		{name: "unknown event", text: `[` + strings.Replace(valid, `"disabled"`, `"disabled", "disabeld"`, 1) + `]`,
			want: `--webhooks: webhooks[0].events[1]: must be one of create, update, started, succeeded`},
		{name: "name in both", text: `[` + valid + `]`, args: []string{"--webhooks-file", file},
			want: `--webhooks-file and --webhooks together (the endpoints of the file first): webhooks[1].name: must be unique, got "crm" twice`},
		{name: "missing file", args: []string{"--webhooks-file", file + ".missing"}, want: "--webhooks-file " + file + ".missing: open"},
		{name: "timeout", args: []string{"--webhook-timeout", "0s"}, want: "--webhook-timeout: must be > 0, got 0s"},
		{name: "in flight", args: []string{"--webhook-max-in-flight", "0"}, want: "--webhook-max-in-flight: must be >= 1, got 0"},
		{name: "attempts", args: []string{"--webhook-max-attempts", "0"}, want: "--webhook-max-attempts: must be >= 1, got 0"},
		{name: "backoff", args: []string{"--webhook-backoff", "2m", "--webhook-max-backoff", "1m"},
			want: "--webhook-max-backoff: must be >= --webhook-backoff 2m0s, got 1m0s"},
		{name: "retention", args: []string{"--webhook-retention", "-1s"}, want: "--webhook-retention: must be > 0, got -1s"},
		{name: "metadata address", text: `[` + strings.Replace(valid, "https://crm.example.com/hooks", "http://169.254.169.254/latest", 1) + `]`,
			want: `--webhooks-file, --webhooks: webhooks[0].url: must not be a loopback, link-local or cloud metadata address or name, got "169.254.169.254" (--webhook-allow-private allows it)`},
		{name: "loopback", text: `[` + strings.Replace(valid, "https://crm.example.com/hooks", "http://localhost:9000/", 1) + `]`,
			want: `webhooks[0].url: must not be a loopback, link-local or cloud metadata address or name, got "localhost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.text != "" {
				args = append(args, "--webhooks", tc.text)
			}
			err := NewMain(io.Discard).ParseFlags(args)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), webhookSecret)
		})
	}
}

func TestWebhookSecretsAreRedactedInLogs(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://plain/db")
	t.Setenv("REDIS_URL", "redis://plain:6379/0")
	var out bytes.Buffer
	m := NewMain(&out)
	require.NoError(t, m.ParseFlags([]string{"--webhooks",
		`[{"name": "crm", "url": "https://crm.example.com/hooks/t0k3n-in-the-path", "secret": "` + webhookSecret + `", "events": ["disabled"]}]`}))
	ep := m.Config.Webhook.Endpoints[0]
	m.Logger.Info("configured", "webhook", ep, "text", "the secret is "+webhookSecret, "err", errors.New(webhookSecret))
	m.Logger.Info("printed", "endpoint", ep.String(), "go", ep.GoString())
	require.Contains(t, out.String(), "crm.example.com")
	require.NotContains(t, out.String(), webhookSecret)
	require.NotContains(t, out.String(), "t0k3n-in-the-path", "an endpoint's path may hold a token too: only its host is logged")
}

// webhookReceiver records the deliveries it gets; it answers 500 to the
// first send of each key, then 200.
type webhookReceiver struct {
	mu   sync.Mutex
	got  []webhook.Payload
	sent map[string]int
}

func (r *webhookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := webhook.Verify(webhookSecret, req.Header.Get(webhook.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil || p.IdempotencyKey != req.Header.Get("Idempotency-Key") {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent[p.IdempotencyKey]++
	if r.sent[p.IdempotencyKey] == 1 {
		http.Error(w, "not now", http.StatusInternalServerError)
		return
	}
	r.got = append(r.got, p)
}

func (r *webhookReceiver) payloads() []webhook.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhook.Payload(nil), r.got...)
}

// TestWebhookServeDeliversDisabledAndEnabled runs freshen serve with a
// webhook endpoint that takes disabled and enabled: a worker's permanent
// failure disables a model, an enable brings it back, and the receiver
// gets both (after a 500 each), signed, and nothing else.
func TestWebhookServeDeliversDisabledAndEnabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := &webhookReceiver{sent: map[string]int{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	hooks, err := json.Marshal([]webhook.Endpoint{{Name: "crm", URL: srv.URL + "/hooks", Secret: webhookSecret,
		Events: []string{refresh.LifecycleDisabled, refresh.LifecycleEnabled}, Prefix: "wh-"}})
	require.NoError(t, err)
	p := e.serve("wh", "--webhooks", string(hooks), "--webhook-backoff", "100ms", "--webhook-max-backoff", "200ms",
		"--webhook-allow-private") // the receiver listens on 127.0.0.1

	const userMessage = "Your file has no header row."
	worker, err := queue.NewWorker(e.rdb, queue.WorkerOptions{Prefix: e.prefix, Queue: "wh", Block: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
		func(ctx context.Context, job queue.Job) error {
			if job.ModelID == "wh-bad" {
				return queue.Permanent(queue.UserMessage(errors.New("no header"), userMessage))
			}
			return nil
		})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, id := range []string{"wh-bad", "wh-ok", "other-bad"} {
		code, res := request(t, "PUT", p.base+"/models/"+id, `{"queue": "wh", "trigger": true}`)
		require.Equal(t, http.StatusCreated, code, res)
	}
	waitFor(t, 30*time.Second, "the disabled webhook", func() bool { return len(rcv.payloads()) == 1 })
	code, res := request(t, "POST", p.base+"/models/wh-bad/enable", "")
	require.Equal(t, http.StatusOK, code, res)
	waitFor(t, 30*time.Second, "the enabled webhook", func() bool { return len(rcv.payloads()) == 2 })

	got := rcv.payloads()
	var disabled, enabled refresh.Event
	require.NoError(t, json.Unmarshal(got[0].Event, &disabled))
	require.NoError(t, json.Unmarshal(got[1].Event, &enabled))
	require.Equal(t, []string{"crm:disabled:wh-bad", "crm:enabled:wh-bad"},
		[]string{got[0].Endpoint + ":" + got[0].Type + ":" + got[0].ModelID, got[1].Endpoint + ":" + got[1].Type + ":" + got[1].ModelID})
	require.Equal(t, userMessage, disabled.Reason)
	require.Equal(t, "wh-bad:disabled:"+disabled.AttemptUID, got[0].IdempotencyKey)
	require.NotEmpty(t, disabled.AttemptUID)
	require.Equal(t, "wh-bad:enabled:"+enabled.At.UTC().Format(time.RFC3339Nano), got[1].IdempotencyKey)
	waitFor(t, 30*time.Second, "both deliveries recorded", func() bool {
		return e.count(`SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered' AND model_id = 'wh-bad'`) == 2
	})
	require.Equal(t, 2.0, p.metric(`freshen_webhook_delivered_total{endpoint="crm"}`))
	require.Equal(t, 2.0, p.metric(`freshen_webhook_retried_total{endpoint="crm"}`))
	require.Zero(t, e.count(`SELECT count(*) FROM webhook_deliveries WHERE model_id <> 'wh-bad'`), "only chosen events under the prefix")
}
