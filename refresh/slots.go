package refresh

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file holds the limits of docs/policy.md, as far as one model sees
// them. Limits (max_running, and max_starts per a period, per queue, id
// prefix or rate key) live in the store; the scheduler counts the
// current attempts that each limit matching a due model covers and the
// starts each rate limit admits (rate.go), and tells Tick which limit
// holds the start back (TickInput.FullLimit, with TickInput.Until for a
// rate limit). A due model held back stays due with waiting_for_slot
// set: it is not started and is not an attempt. Starts go to the waiting
// models by the fair turns of the tenants (fair.go), then refresh_at,
// then id.

// WaitForSlot records that the start due at now waits for the limit
// in.FullLimit: waiting_for_slot = true, waiting_limit = its Name(),
// waiting_until = in.Until (when a rate limit admits its next start; zero
// for a concurrency limit) and waiting_tenant = in.Tenant; nothing else
// changes, and the model stays due. The decision, a wait event whose
// Reason is the limit (e.g. `queue "exports" (max_running 5)`) and whose
// Why says when the start can be made, is made once per wait and limit:
// it changes nothing (Decision.Event "") when the model already waits for
// that limit or no start is due, and is made again when the model,
// offered a start of the limit it waited for, finds another limit full.
// Start, Skip, Pause, Cancel and Edit (when the plan is no longer due)
// end the wait.
func WaitForSlot(m Model, in TickInput, now time.Time) (Model, Decision) {
	l := in.FullLimit
	if (m.WaitingForSlot && m.WaitingLimit == l.Name()) || !m.CanStart(now) {
		return m, Decision{}
	}
	m.endWait()
	m.WaitingForSlot, m.WaitingLimit, m.WaitingUntil, m.WaitingTenant = true, l.Name(), in.Until, in.Tenant
	limit := l.String()
	why := "due since " + ts(m.RefreshAt) + ", but " + limit + " has no free slot: the start waits"
	if !in.Until.IsZero() {
		why = "due since " + ts(m.RefreshAt) + ", but " + limit + " admits no start before " + ts(in.Until) + ": the start waits"
	}
	return m, Decision{Event: EventWait, Rule: "slot.wait", AttemptNo: m.AttemptNo, Reason: limit, Why: why}
}

// WaitTooLong marks the wait of a model held back by limit l (the limit
// it waits for) that has lasted longer than its policy's max_lateness at
// now (now - refresh_at > max_lateness): wait_too_long = true and a
// wait_too_long event whose Reason is l, once per wait. It changes
// nothing when the model does not wait, the policy has no max_lateness,
// the wait is not that long yet or was marked already. The catch-up
// window skips a late start at a scheduled occurrence before it can wait
// that long (Skip); the others (triggers, retry delays, snoozes) wait on.
func WaitTooLong(m Model, l Limit, now time.Time) (Model, Decision) {
	window := time.Duration(m.Policy.MaxLateness)
	if !m.WaitingForSlot || m.WaitTooLong || window <= 0 || now.Sub(m.RefreshAt) <= window {
		return m, Decision{}
	}
	m.WaitTooLong = true
	limit := l.String()
	return m, Decision{
		Event: EventWaitTooLong, Rule: "slot.wait_too_long", AttemptNo: m.AttemptNo, Reason: limit,
		Why: fmt.Sprintf("due since %s, the start has waited for %s for %s, more than max_lateness %s",
			ts(m.RefreshAt), limit, Duration(now.Sub(m.RefreshAt)), m.Policy.MaxLateness),
	}
}

// endWait ends the model's wait for a limit, if any.
func (m *Model) endWait() {
	m.WaitingForSlot, m.WaitingLimit, m.WaitingUntil, m.WaitingTenant, m.WaitTooLong = false, "", time.Time{}, "", false
}

// Kinds of concurrency limit (Limit.Kind).
const (
	// LimitQueue covers the models of one queue (Key is the queue name).
	LimitQueue = "queue"
	// LimitPrefix covers the models whose id starts with Key.
	LimitPrefix = "prefix"
	// LimitRateKey covers the models whose rate_key equals Key.
	LimitRateKey = "rate_key"
)

// MaxLimitKeyBytes bounds the key of a limit.
const MaxLimitKeyBytes = 200

// Bounds of a rate limit (docs/policy.md).
const (
	MinRatePer   = time.Second
	MaxRatePer   = 24 * time.Hour
	MaxRateBurst = 10000
)

// Limit is a limit of docs/policy.md on the models it covers: at most
// MaxRunning current attempts (a concurrency limit; 0: none), and at most
// MaxStarts starts in any window of Per (a rate limit; 0: none), of which
// at most Burst in any window of Per*Burst/MaxStarts when Burst is set
// (0: no burst bound beyond MaxStarts). A limit has at least one of the
// two.
type Limit struct {
	Kind       string   `json:"kind"`
	Key        string   `json:"key"`
	MaxRunning int      `json:"max_running,omitempty"`
	MaxStarts  int      `json:"max_starts,omitempty"`
	Per        Duration `json:"per,omitempty"`
	Burst      int      `json:"burst,omitempty"`
}

// Concurrent reports whether l bounds the current attempts.
func (l Limit) Concurrent() bool { return l.MaxRunning > 0 }

// Rated reports whether l bounds the starts per period.
func (l Limit) Rated() bool { return l.MaxStarts > 0 }

// Covers reports whether the limit covers model m.
func (l Limit) Covers(m Model) bool {
	switch l.Kind {
	case LimitQueue:
		return m.Queue == l.Key
	case LimitPrefix:
		return len(m.ID) >= len(l.Key) && m.ID[:len(l.Key)] == l.Key
	case LimitRateKey:
		return m.RateKey != "" && m.RateKey == l.Key
	}
	return false
}

// Name names the limit as kind:key, e.g. "prefix:acme-", as serve's
// --max-running flag and a model's waiting_limit do.
func (l Limit) Name() string { return l.Kind + ":" + l.Key }

// String names the limit as a wait event's reason does, e.g. `queue
// "exports" (max_running 5)` or `rate_key "api.example.com" (max_starts
// 10 per 1m, burst 2)`.
func (l Limit) String() string {
	var parts []string
	if l.Concurrent() {
		parts = append(parts, fmt.Sprintf("max_running %d", l.MaxRunning))
	}
	if l.Rated() {
		r := fmt.Sprintf("max_starts %d per %s", l.MaxStarts, l.Per)
		if l.Burst > 0 {
			r += fmt.Sprintf(", burst %d", l.Burst)
		}
		parts = append(parts, r)
	}
	return fmt.Sprintf("%s %q (%s)", l.Kind, l.Key, strings.Join(parts, ", "))
}

// CheckLimit returns a *ValidationError naming each broken rule of l
// (kind: queue, prefix or rate_key; key: a queue name for a queue, a
// non-empty id prefix for a prefix, a rate key for a rate_key;
// max_running >= 1 if set; max_starts >= 1 if set, with per from 1s to
// 24h; burst from 1 to 10,000 if set, only with max_starts; at least one
// of max_running and max_starts), or nil.
func CheckLimit(l Limit) error {
	var errs errorList
	switch l.Kind {
	case LimitQueue:
		if !ValidQueue(l.Key) {
			errs.add("key", "%s, got %s", QueueRule, quoteShort(l.Key))
		}
	case LimitPrefix:
		if l.Key == "" || len(l.Key) > MaxLimitKeyBytes || !ValidID(l.Key) {
			errs.add("key", "must be the start of a model id: %s, got %s", IDRule, quoteShort(l.Key))
		}
	case LimitRateKey:
		if !ValidRateKey(l.Key) {
			errs.add("key", "%s, got %s", RateKeyRule, quoteShort(l.Key))
		}
	default:
		errs.add("kind", "must be %q, %q or %q, got %s", LimitQueue, LimitPrefix, LimitRateKey, quoteShort(l.Kind))
	}
	if l.MaxRunning < 0 || (l.MaxRunning == 0 && l.MaxStarts == 0) {
		errs.add("max_running", "must be >= 1 (to start none of the models, pause them), or left out with max_starts set, got %d", l.MaxRunning)
	}
	per := time.Duration(l.Per)
	switch {
	case l.MaxStarts < 0 || (l.MaxStarts == 0 && (per != 0 || l.Burst != 0)):
		errs.add("max_starts", "must be >= 1 (to start none of the models, pause them), got %d", l.MaxStarts)
	case l.MaxStarts > 0 && (per < MinRatePer || per > MaxRatePer):
		errs.add("per", "must be from %s to %s, got %s", Duration(MinRatePer), Duration(MaxRatePer), Duration(per))
	}
	if l.Burst < 0 || l.Burst > MaxRateBurst {
		errs.add("burst", "must be from 1 to %d, got %d", MaxRateBurst, l.Burst)
	}
	return errs.err()
}

// LimitMissingRule is the rule, of field max_running, of a limit written
// with neither max_running nor max_starts.
const LimitMissingRule = "missing, as is max_starts: a limit sets max_running, max_starts with per, or both"

// LimitNumberRule returns the rule that n, given for member name
// (max_running, max_starts or burst) of a limit, breaks, or "": a number
// given is a bound, so 0 is refused rather than read as unset (a zero
// Limit field is unset, which CheckLimit cannot tell from a 0 given). The
// limits API, the dashboard's form and simulate's specs check the numbers
// they are given with it.
func LimitNumberRule(name string, n int) string {
	switch {
	case name == "burst" && n < 1:
		return fmt.Sprintf("must be from 1 to %d, got %d", MaxRateBurst, n)
	case n < 1:
		return fmt.Sprintf("must be >= 1 (to start none of the models, pause them), got %d", n)
	}
	return ""
}

// MaxRateKeyBytes bounds a model's rate_key and the key of a rate_key
// limit.
const MaxRateKeyBytes = 128

// RateKeyRule is the rule of a rate key, as errors state it.
const RateKeyRule = "must be 1 to 128 bytes of UTF-8 without control characters"

// ValidRateKey reports whether k is a valid rate key: 1 to
// MaxRateKeyBytes bytes of valid UTF-8 without control characters.
func ValidRateKey(k string) bool {
	if k == "" || len(k) > MaxRateKeyBytes || !utf8.ValidString(k) {
		return false
	}
	for _, r := range k {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
