package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
	"github.com/freshen-dev/freshen/refresh/webhook"
)

// Webhook endpoints are configuration: serve reads them from a file
// (--webhooks-file, FRESHEN_WEBHOOKS_FILE) and from the text of --webhooks
// (FRESHEN_WEBHOOKS), both a JSON array of
//
//	{"name": "crm", "url": "https://crm.example.com/hooks/freshen", "secret": "...", "events": ["disabled"], "prefix": "acme-"}
//
// (prefix optional). The secrets sign the deliveries; they are redacted
// from every log line and error. See docs/webhooks.md.

// webhooksExample heads the errors of an endpoint list that does not parse.
const webhooksExample = `want a JSON array such as [{"name": "crm", "url": "https://...", "secret": "...", "events": ["disabled"]}]`

// WebhookConfig is the configuration of webhook deliveries.
type WebhookConfig struct {
	// File and Text hold the endpoints; none: no webhook is sent.
	File string
	Text string
	// Endpoints are those read from File and Text by ParseFlags.
	Endpoints []webhook.Endpoint

	Timeout         time.Duration
	MaxInFlight     int
	MaxAttempts     int
	MaxAge          time.Duration
	Backoff         time.Duration
	MaxBackoff      time.Duration
	Retention       time.Duration
	FailedRetention time.Duration
	// AllowPrivate lets endpoints point at loopback, link-local and cloud
	// metadata addresses and names (webhook.CheckPrivate).
	AllowPrivate bool
}

// defaultWebhookConfig returns the defaults of the webhook flags.
func defaultWebhookConfig() WebhookConfig {
	return WebhookConfig{
		Timeout: 10 * time.Second, MaxInFlight: 4, MaxAttempts: 12, MaxAge: 24 * time.Hour,
		Backoff: 10 * time.Second, MaxBackoff: time.Hour, Retention: 24 * time.Hour, FailedRetention: 7 * 24 * time.Hour,
	}
}

// addFlags declares the webhook flags on fs.
func (w *WebhookConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&w.File, "webhooks-file", w.File, `file of the webhook endpoints: a JSON array of {"name", "url", "secret", "events", "prefix"} (see docs/webhooks.md)`)
	fs.StringVar(&w.Text, "webhooks", w.Text, "the webhook endpoints as the text of a webhooks file")
	durationVar(fs, &w.Timeout, "webhook-timeout", w.Timeout, "longest wait for an endpoint's answer to one delivery")
	fs.IntVar(&w.MaxInFlight, "webhook-max-in-flight", w.MaxInFlight, "most deliveries this instance sends to one endpoint at once")
	fs.IntVar(&w.MaxAttempts, "webhook-max-attempts", w.MaxAttempts, "sends of a delivery before it is given up (marked failed)")
	durationVar(fs, &w.MaxAge, "webhook-max-age", w.MaxAge, "age of its event after which a delivery is given up rather than retried")
	durationVar(fs, &w.Backoff, "webhook-backoff", w.Backoff, "wait before the first retry of a delivery; it doubles at each retry")
	durationVar(fs, &w.MaxBackoff, "webhook-max-backoff", w.MaxBackoff, "longest wait between two sends of a delivery (before jitter)")
	durationVar(fs, &w.Retention, "webhook-retention", w.Retention, "how long delivered deliveries are kept")
	durationVar(fs, &w.FailedRetention, "webhook-failed-retention", w.FailedRetention, "how long deliveries given up are kept for inspection")
	fs.BoolVar(&w.AllowPrivate, "webhook-allow-private", w.AllowPrivate, "let webhook endpoints be loopback, link-local or cloud metadata addresses or names "+
		"(127.0.0.0/8, ::1, 169.254.0.0/16, fe80::/10, metadata.google.internal, ...), when written and once resolved")
}

// check validates the flags and reads the endpoints.
func (w *WebhookConfig) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--webhook-timeout", w.Timeout}, {"--webhook-max-age", w.MaxAge}, {"--webhook-backoff", w.Backoff},
		{"--webhook-max-backoff", w.MaxBackoff}, {"--webhook-retention", w.Retention}, {"--webhook-failed-retention", w.FailedRetention},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s: must be > 0, got %s", d.name, d.v)
		}
	}
	switch {
	case w.MaxInFlight < 1:
		return fmt.Errorf("--webhook-max-in-flight: must be >= 1, got %d", w.MaxInFlight)
	case w.MaxAttempts < 1:
		return fmt.Errorf("--webhook-max-attempts: must be >= 1, got %d", w.MaxAttempts)
	case w.MaxBackoff < w.Backoff:
		return fmt.Errorf("--webhook-max-backoff: must be >= --webhook-backoff %s, got %s", w.Backoff, w.MaxBackoff)
	}
	eps, err := loadWebhooks(w.File, w.Text)
	if err != nil {
		return err
	}
	if !w.AllowPrivate {
		if err := webhook.CheckPrivate(eps); err != nil {
			return fmt.Errorf("--webhooks-file, --webhooks: %w", err)
		}
	}
	w.Endpoints = eps
	return nil
}

// secrets returns the endpoints' secrets, for the redactor.
func (w *WebhookConfig) secrets() []string {
	var out []string
	for _, e := range w.Endpoints {
		out = append(out, e.Secret)
	}
	return out
}

// webhooksList is where serve reads its webhook endpoints.
var webhooksList = configList{fileFlag: "webhooks-file", textFlag: "webhooks", item: "webhooks", example: webhooksExample}

// loadWebhooks returns the endpoints of file and text (either may be ""),
// the file's first. Its errors name the flag and the field, e.g.
// "--webhooks: webhooks[0].url: must be an absolute http or https URL, got
// \"crm\"", and never show a secret.
func loadWebhooks(file, text string) ([]webhook.Endpoint, error) {
	all, err := readConfigList(webhooksList, file, text, webhook.Validate)
	if err != nil {
		return nil, err
	}
	if err := webhook.Validate(all); err != nil { // a name in both lists
		return nil, fmt.Errorf("--webhooks-file and --webhooks together (the endpoints of the file first): %w", err)
	}
	return all, nil
}

// webhooks are the parts of webhook delivery that Run wires in: the
// publisher's RouteFunc, the dispatcher and its collectors. All are nil
// without endpoints.
type webhooks struct {
	route      func([]refresh.Event) []refresh.Delivery
	dispatcher *webhook.Dispatcher
	collectors []prometheus.Collector
}

// newWebhooks returns the webhook parts of w on store, or none if w has
// no endpoint.
func newWebhooks(w WebhookConfig, store *postgres.Store, clock refresh.Clock, m *Main) (webhooks, error) {
	if len(w.Endpoints) == 0 {
		return webhooks{}, nil
	}
	router, err := webhook.NewRouter(w.Endpoints)
	if err != nil {
		return webhooks{}, err
	}
	names := make([]string, len(w.Endpoints))
	for i, e := range w.Endpoints {
		names[i] = e.Name
	}
	metrics := webhook.NewMetrics(names...)
	d, err := webhook.New(webhook.Config{
		Store: store, Endpoints: w.Endpoints, Clock: clock, Timeout: w.Timeout, MaxInFlight: w.MaxInFlight,
		MaxAttempts: w.MaxAttempts, MaxAge: w.MaxAge, Backoff: webhook.Backoff{Base: w.Backoff, Max: w.MaxBackoff, Jitter: 0.2},
		Retention: w.Retention, FailedRetention: w.FailedRetention, AllowPrivate: w.AllowPrivate,
		Logger: m.Logger, Metrics: metrics, SentFunc: m.WebhookSentFunc,
	})
	if err != nil {
		return webhooks{}, err
	}
	for _, e := range w.Endpoints {
		m.Logger.Info("webhook endpoint", "webhook", e)
	}
	return webhooks{route: router.Route, dispatcher: d, collectors: metrics.Collectors()}, nil
}

// start runs the dispatcher, if any, until ctx ends.
func (w webhooks) start(ctx context.Context) {
	if w.dispatcher != nil {
		_ = w.dispatcher.Start(ctx)
	}
}

// wake wakes the dispatcher, if any, after a publisher pass that wrote
// deliveries.
func (w webhooks) wake(res refresh.PublishResult, _ error) {
	if w.dispatcher != nil && res.Routed > 0 {
		w.dispatcher.Wake()
	}
}
