// Package webhook delivers chosen lifecycle events to HTTP endpoints.
//
// Routing happens in the transaction that takes the events out of the
// outbox: the Router, passed to refresh.Publisher as its RouteFunc, turns
// each event into one refresh.Delivery per endpoint that asked for it,
// which the store writes with the taking (refresh.DeliveryStore), so that
// a delivery is never lost between the two. The Dispatcher then claims due
// deliveries, POSTs them signed (Sign) with their idempotency key, and
// retries failed sends with capped exponential backoff and jitter, until a
// 2xx answer, or until it gives up after MaxAttempts sends or MaxAge. Each
// endpoint has its own bound of sends in flight, so a slow endpoint never
// holds up the others. Delivery is at least once: a receiver drops
// duplicates by the Idempotency-Key header.
package webhook

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// Endpoint is a receiver of webhook deliveries.
type Endpoint struct {
	// Name identifies the endpoint in the payload, the metrics and the
	// deliveries table.
	Name string `json:"name"`
	// URL is where deliveries are POSTed (http or https).
	URL string `json:"url"`
	// Secret signs the deliveries (see Sign); it is never logged.
	Secret string `json:"secret"`
	// Events are the webhook event names sent (see Names).
	Events []string `json:"events"`
	// Prefix, if set, limits the deliveries to models whose id starts
	// with it.
	Prefix string `json:"prefix,omitempty"`
}

// String describes e without its secret, and with only the scheme and
// host of its URL (a path or query may hold a token too).
func (e Endpoint) String() string {
	return fmt.Sprintf("webhook %s (%s, events %s, prefix %q)", e.Name, origin(e.URL), strings.Join(e.Events, ","), e.Prefix)
}

// GoString is String, so that %#v shows no secret either.
func (e Endpoint) GoString() string { return e.String() }

// LogValue logs e as String describes it.
func (e Endpoint) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", e.Name), slog.String("url", origin(e.URL)),
		slog.String("events", strings.Join(e.Events, ",")), slog.String("prefix", e.Prefix))
}

// wants reports whether e takes the event named name of model id.
func (e Endpoint) wants(name, id string) bool {
	return strings.HasPrefix(id, e.Prefix) && slices.Contains(e.Events, name)
}

// IdempotencyKey returns the key of the delivery of e under the webhook
// name name, the same on every send of it and to every endpoint:
// "{model_id}:{event}:{attempt_uid}" for an event about an attempt, and
// for freshness_lost and freshness_restored
// "{model_id}:{event}:{overdue_since}" (refresh.Event.FreshnessKey).
// Events about no attempt, and status (an attempt posts many), are keyed
// by their time: "{model_id}:{event}:{at}", RFC 3339 in UTC.
func IdempotencyKey(e refresh.Event, name string) string {
	if k := e.FreshnessKey(); k != "" {
		return k
	}
	if e.AttemptUID != "" && name != refresh.EventStatus {
		return e.ModelID + ":" + name + ":" + e.AttemptUID
	}
	return e.ModelID + ":" + name + ":" + e.At.UTC().Format("2006-01-02T15:04:05.999999999Z07:00")
}

// nameRE is what an endpoint's name may be.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// MinSecretLength is the shortest secret accepted.
const MinSecretLength = 16

// Validate checks endpoints, naming the field of each broken rule, e.g.
// "webhooks[1].events[0]: must be one of started, ..., got \"disabeld\"".
func Validate(endpoints []Endpoint) error {
	var errs []refresh.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, refresh.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	seen := map[string]bool{}
	for i, e := range endpoints {
		f := fmt.Sprintf("webhooks[%d].", i)
		switch {
		case e.Name == "":
			add(f+"name", "must be set")
		case !nameRE.MatchString(e.Name):
			add(f+"name", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, got %q", e.Name)
		case seen[e.Name]:
			add(f+"name", "must be unique, got %q twice", e.Name)
		}
		seen[e.Name] = true
		if e.URL == "" {
			add(f+"url", "must be set")
		} else if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(f+"url", "must be an absolute http or https URL, got %q", redactURL(e.URL))
		} else if u.User != nil {
			add(f+"url", "must not hold credentials (sign with the secret instead)")
		}
		if len(e.Secret) < MinSecretLength {
			add(f+"secret", "must be at least %d characters, got %d", MinSecretLength, len(e.Secret))
		}
		if len(e.Events) == 0 {
			add(f+"events", "must name at least one event")
		}
		for j, name := range e.Events {
			switch {
			case !slices.Contains(refresh.LifecycleNames, name):
				add(fmt.Sprintf("%sevents[%d]", f, j), "must be one of %s, got %q", strings.Join(refresh.LifecycleNames, ", "), name)
			case slices.Contains(e.Events[:j], name):
				add(fmt.Sprintf("%sevents[%d]", f, j), "must not repeat %q", name)
			}
		}
	}
	if len(errs) > 0 {
		return &refresh.ValidationError{Fields: errs}
	}
	return nil
}

// origin returns the scheme and host of the URL s, or "(invalid URL)".
func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host
}

// redactURL returns s with the password of its user info, if any,
// replaced.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}
