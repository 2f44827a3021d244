package refresh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/freshen-dev/freshen/rrule"
)

// Policy is a model's refresh policy (docs/policy.md). Build one with
// ParsePolicy, which applies defaults and validates it, and check it with
// CheckAt at the time of the write. The JSON form of a parsed policy states
// every default, so it parses back to the same policy.
type Policy struct {
	// Schedule is RFC 5545 text or a bare RRULE body; "" means on demand.
	Schedule string `json:"schedule,omitempty"`
	// Timezone names the zone of a bare RRULE or floating DTSTART, and of
	// {since} in the disabled message; "" means UTC.
	Timezone string   `json:"timezone,omitempty"`
	Timeout  Duration `json:"timeout"`
	Retry    Retry    `json:"retry"`
	// OnExhausted is "disable" or "wait_next".
	OnExhausted string `json:"on_exhausted"`
	// GiveUpAfter bounds the failure streak; 0 means unbounded.
	GiveUpAfter Duration `json:"give_up_after,omitzero"`
	// DisabledMessage is the customer-facing reason of a disable, with the
	// placeholders {attempts}, {error} and {since}.
	DisabledMessage string `json:"disabled_message"`

	// The extensions of docs/policy.md. Each is optional: its zero
	// value is today's behaviour and is left out of the JSON form.

	// MaxAge is the freshness promise: the model is overdue max_age after
	// its last success (or its creation, if it never succeeded). 0: no
	// promise.
	MaxAge Duration `json:"max_age,omitzero"`
	// TriggerDebounce, if set (not zero), gathers the triggers that come
	// close together into one. A value, not a pointer, so that a copy of a
	// Policy shares nothing.
	TriggerDebounce Debounce `json:"trigger_debounce,omitzero"`
	// MaxSnooze bounds how long a round may snooze, from its first snooze;
	// 0 stands for DefaultMaxSnooze (see SnoozeBound).
	MaxSnooze Duration `json:"max_snooze,omitzero"`
	// Spread shifts every occurrence of the schedule by the model's offset,
	// (FNV-1a 64 of the model id) mod spread in whole seconds. 0: none.
	Spread Duration `json:"spread,omitzero"`
	// MaxLateness is the catch-up window: a start planned at a scheduled
	// occurrence and found more than max_lateness after it is skipped. 0:
	// never skipped.
	MaxLateness Duration `json:"max_lateness,omitzero"`

	// bounds are the global limits the policy was checked against that
	// bound its later use (see WithLimits).
	bounds policyBounds
}

// policyBounds are the limits that bound what a policy computes after it
// was written. The zero value stands for DefaultLimits, so that a policy
// parsed under the default limits equals its JSON round trip. It holds no
// reference, so a copy of a Policy shares nothing through it.
type policyBounds struct {
	maxDelay  time.Duration // Limits.MaxDelay
	maxReason int           // Limits.MaxReasonBytes
	schedule  rrule.Limits  // Limits.Schedule
}

// Retry says how long to wait before each retry, and which failures retry.
type Retry struct {
	// Delays is an explicit list: retry n waits Delays[n-1]. An empty,
	// non-nil list means no retries.
	Delays []Duration `json:"delays,omitzero"`
	// Backoff computes the delays; exactly one of Delays and Backoff is set.
	Backoff *Backoff `json:"backoff,omitempty"`
	// Jitter j in [0, 1) spreads each delay over delay·(1 ± j).
	Jitter float64 `json:"jitter"`
	// Align is nil when not given: true when a schedule exists.
	Align *bool `json:"align,omitempty"`
	// RetryOn lists the error kinds that retry; empty means all.
	RetryOn []string `json:"retry_on,omitzero"`
	// NonRetryable lists the error kinds that never retry, even when
	// RetryOn lists them. ParsePolicy gives it the default (validation,
	// not_found, unauthorized, forbidden) only when both lists are left
	// out or empty: an allow-list is the caller's whole statement. An
	// empty, non-nil list is kept as given (nothing is excluded).
	NonRetryable []string `json:"non_retryable,omitzero"`
}

// Backoff strategies.
const (
	BackoffImmediate   = "immediate"
	BackoffFixed       = "fixed"
	BackoffLinear      = "linear"
	BackoffExponential = "exponential"
	BackoffFibonacci   = "fibonacci"
)

// Backoff computes retry n's delay (n >= 1) from a strategy, then caps it.
type Backoff struct {
	Strategy string `json:"strategy"`
	// Base is the unit of every strategy but immediate, which must not set it.
	Base Duration `json:"base,omitzero"`
	// Multiplier is the factor of the exponential strategy, which alone may
	// set it.
	Multiplier float64 `json:"multiplier,omitempty"`
	// MaxDelay caps every delay (before jitter).
	MaxDelay   Duration `json:"max_delay"`
	MaxRetries int      `json:"max_retries"`
}

// Debounce is the policy's trigger_debounce: a trigger takes effect once
// no other came for Quiet, and at the latest MaxWait after the first one
// of its window. 0 < Quiet <= MaxWait; the zero value means no debounce.
type Debounce struct {
	Quiet   Duration `json:"quiet"`
	MaxWait Duration `json:"max_wait"`
}

// Debounced reports whether the policy debounces triggers.
func (p Policy) Debounced() bool { return p.TriggerDebounce != (Debounce{}) }

// DefaultMaxSnooze is how long a round may snooze when the policy leaves
// max_snooze out.
const DefaultMaxSnooze = 24 * time.Hour

// SnoozeBound returns max_snooze, or DefaultMaxSnooze if the policy leaves
// it out.
func (p Policy) SnoozeBound() time.Duration {
	if p.MaxSnooze > 0 {
		return time.Duration(p.MaxSnooze)
	}
	return DefaultMaxSnooze
}

// On-exhausted behaviours.
const (
	ExhaustedDisable  = "disable"
	ExhaustedWaitNext = "wait_next"
)

// Duration is a time.Duration that reads Go syntax ("90s", "1h30m") and
// ISO 8601 ("PT5M", "P7D") from JSON and writes Go syntax.
type Duration time.Duration

// Defaults of a policy, applied by ParsePolicy to what the input leaves out.
const (
	defaultTimeout           = Duration(time.Hour)
	defaultDisabledMessage   = "Refresh disabled after {attempts} failed attempt(s)."
	defaultBackoffMultiplier = 2
	defaultBackoffMaxRetries = 5
)

func defaultDelays() []Duration {
	return []Duration{0, Duration(time.Minute), Duration(5 * time.Minute), Duration(15 * time.Minute),
		Duration(30 * time.Minute), Duration(time.Hour)}
}

func defaultNonRetryable() []string {
	return []string{"validation", "not_found", "unauthorized", "forbidden"}
}

// DefaultPolicy returns the policy of an on-demand model that sets nothing:
// what ParsePolicy returns for "{}" under DefaultLimits.
func DefaultPolicy() Policy {
	return Policy{
		Timeout:         defaultTimeout,
		Retry:           Retry{Delays: defaultDelays(), NonRetryable: defaultNonRetryable()},
		OnExhausted:     ExhaustedDisable,
		DisabledMessage: defaultDisabledMessage,
	}
}

// ParsePolicy reads a policy from JSON, applies the defaults of what it
// leaves out and validates it against lim. JSON null counts as left out.
// Defaults that would break lim are made to fit it: under a limit of 3
// retries, the default delays are ["0s", "1m", "5m"]; under a minimum
// timeout of 2h, the default timeout is 2h. The policy returned is bound
// to lim (see WithLimits).
//
// Unknown and repeated fields are refused at every level, and so are
// strings holding NUL or invalid UTF-8. Any error is a *ValidationError
// that lists the broken rules, each named by its field path, e.g.
// "retry.backoff.multiplier: must be >= 1, got 0.5", up to
// lim.MaxFieldErrors; past that the decoder only counts what it still
// finds (unknown and repeated fields) and checks no more rules.
//
// ParsePolicy checks what does not depend on the time: a write must also
// call CheckAt.
func ParsePolicy(data []byte, lim Limits) (Policy, error) {
	lim = lim.orDefault()
	d := policyDecoder{lim: lim, bad: map[string]bool{}, errs: errorList{max: lim.MaxFieldErrors}}
	p := d.policy(data)
	if !d.bad[""] && !d.errs.full() { // a policy that is no JSON object has no rules to check
		p.check(lim, d.bad, &d.errs)
	}
	if err := d.errs.err(); err != nil {
		return Policy{}, err
	}
	return p.WithLimits(lim), nil
}

// Validate checks p against lim and returns a *ValidationError listing the
// broken rules (at most lim.MaxFieldErrors), or nil. It applies no
// defaults: a Policy built in code should start from DefaultPolicy. Like
// ParsePolicy, it leaves the checks that depend on the time to CheckAt.
func (p Policy) Validate(lim Limits) error {
	lim = lim.orDefault()
	errs := errorList{max: lim.MaxFieldErrors}
	p.check(lim, nil, &errs)
	return errs.err()
}

// CheckAt runs the checks of p that depend on the time of the write, now,
// and on the creation time of the model, created (which anchors a schedule
// without DTSTART; for a new model, now): the schedule must have an
// occurrence at or after now ("schedule: rule has no occurrence after
// <now>", e.g. an UNTIL in the past), must be no denser than
// lim.MinInterval, and spread must be below its shortest gap ("spread: must
// be less than the schedule's shortest gap between occurrences, ...").
// It returns a *ValidationError naming the field, or nil. An on-demand
// policy passes.
//
// A write that sets the schedule (a create, a replace, a patch of
// schedule, timezone or spread) calls ParsePolicy, then CheckAt with the
// time of the request; the simulator checks at the spec's start.
func (p Policy) CheckAt(now, created time.Time, lim Limits) error {
	lim = lim.orDefault()
	if p.Schedule == "" {
		return nil
	}
	errs := errorList{max: lim.MaxFieldErrors}
	s, err := rrule.Parse(p.Schedule, rrule.Options{Timezone: p.Timezone, Created: created, Limits: lim.Schedule})
	switch {
	case err != nil:
		errs.add("schedule", "%s", err)
	default:
		if _, ok := s.First(now); !ok {
			errs.add("schedule", "%s after %s", rrule.ErrNoOccurrence, ts(now))
			break
		}
		if rule := checkMinInterval(s, now, lim.MinInterval); rule != "" {
			errs.add("schedule", "%s", rule)
		}
		if rule := checkSpread(s, now, p.Spread); rule != "" {
			errs.add("spread", "%s", rule)
		}
	}
	return errs.err()
}

// checkSpread returns the rule a spread breaks, e.g. "must be less than
// the schedule's shortest gap between occurrences, 1h0m0s, got 2h": the
// shifted occurrences must keep their order, so spread must be below the
// smallest distance between consecutive occurrences of s among the first
// 1,000 at or after now (the measure of the minimum schedule interval). It
// returns "" for a spread that fits, or none.
func checkSpread(s *rrule.Schedule, now time.Time, spread Duration) string {
	if spread <= 0 {
		return ""
	}
	gap, ok := s.MinGap(now.Add(-time.Nanosecond), minIntervalOccurrences)
	if !ok || time.Duration(spread) < gap {
		return ""
	}
	return fmt.Sprintf("must be less than the schedule's shortest gap between occurrences, %s, got %s", Duration(gap), spread)
}

// minIntervalOccurrences is how many occurrences after a write the minimum
// schedule interval looks at (docs/policy.md, cost bounds).
const minIntervalOccurrences = 1000

// checkMinInterval returns the broken rule, e.g. "occurrences must be at
// least 1m0s apart, got 30s", when two consecutive occurrences of s among
// the first 1,000 at or after now are closer than minInterval, and ""
// otherwise. Its cost is bounded by the schedule's work limit.
func checkMinInterval(s *rrule.Schedule, now time.Time, minInterval time.Duration) string {
	if minInterval <= 0 {
		return ""
	}
	gap, ok := s.MinGap(now.Add(-time.Nanosecond), minIntervalOccurrences)
	if !ok || gap >= minInterval {
		return ""
	}
	return fmt.Sprintf("occurrences must be at least %s apart, got %s", Duration(minInterval), Duration(gap))
}

// WithLimits returns p bound to lim: Delay never returns more than
// lim.MaxDelay, DisabledReason never more than lim.MaxReasonBytes.
// ParsePolicy binds the policy it returns to its limits. The binding is no
// part of the JSON form: a policy decoded with encoding/json, as a store
// reads one back, is bound to DefaultLimits until WithLimits binds it
// again.
func (p Policy) WithLimits(lim Limits) Policy {
	lim = lim.orDefault()
	def := DefaultLimits()
	p.bounds = policyBounds{}
	if lim.MaxDelay != def.MaxDelay || lim.MaxReasonBytes != def.MaxReasonBytes || lim.Schedule != (rrule.Limits{}) {
		p.bounds = policyBounds{maxDelay: lim.MaxDelay, maxReason: lim.MaxReasonBytes, schedule: lim.Schedule}
	}
	return p
}

// scheduleOptions are the options the policy's schedule is read with for a
// model created at created.
func (p Policy) scheduleOptions(created time.Time) rrule.Options {
	return rrule.Options{Timezone: p.Timezone, Created: created, Limits: p.bounds.schedule}
}

// maxDelay returns the bound of the final delay.
func (p Policy) maxDelay() time.Duration {
	if p.bounds.maxDelay > 0 {
		return p.bounds.maxDelay
	}
	return defaultMaxDelay
}

// maxReason returns the bound of a disabled reason, in bytes.
func (p Policy) maxReason() int {
	if p.bounds.maxReason > 0 {
		return p.bounds.maxReason
	}
	return defaultMaxReasonBytes
}

// MaxRetries returns the number of retries of one round: len(delays), or
// backoff.max_retries.
func (p Policy) MaxRetries() int {
	if b := p.Retry.Backoff; b != nil {
		return b.MaxRetries
	}
	return len(p.Retry.Delays)
}

// Delay returns how long retry n (n >= 1) waits: delays[n-1], or the backoff
// strategy's delay capped at max_delay, then spread by the jitter, then
// bounded by the global maximum delay p is bound to (Limits.MaxDelay; see
// WithLimits). The jitter is a pure function of (modelID,
// consecutiveFailures, failingSince), so the same inputs give the same
// delay. Delay never overflows and is never negative; an n beyond the
// delays list waits the last delay, and an n below 1 counts as 1.
func (p Policy) Delay(n int, modelID string, consecutiveFailures int, failingSince time.Time) time.Duration {
	n = max(n, 1)
	var d time.Duration
	switch {
	case p.Retry.Backoff != nil:
		d = p.Retry.Backoff.delay(n)
	case len(p.Retry.Delays) > 0:
		d = time.Duration(p.Retry.Delays[min(n, len(p.Retry.Delays))-1])
	}
	d = max(d, 0)
	if j := p.Retry.Jitter; j > 0 && d > 0 {
		u := jitterUnit(modelID, consecutiveFailures, failingSince)
		f := float64(d) * (1 + j*(2*u-1))
		// Round to the millisecond: jitter finer than that only clutters logs.
		d = saturate(math.Round(f/float64(time.Millisecond)) * float64(time.Millisecond))
	}
	return min(d, p.maxDelay())
}

// delay returns retry n's delay before jitter, capped at MaxDelay.
func (b *Backoff) delay(n int) time.Duration {
	limit := max(time.Duration(b.MaxDelay), 0)
	base := float64(b.Base)
	var f float64
	switch b.Strategy {
	case BackoffFixed:
		f = base
	case BackoffLinear:
		f = base * float64(n)
	case BackoffExponential:
		f = base * math.Pow(b.Multiplier, float64(n-1))
	case BackoffFibonacci:
		f = base * fibonacci(n, float64(limit)/base)
	default: // immediate, or unknown in a policy that was not validated
		return 0
	}
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	if f >= float64(limit) {
		return limit
	}
	return time.Duration(math.Round(f))
}

// fibonacci returns fib(n) (fib(1) = fib(2) = 1), or the first Fibonacci
// number above limit if that comes first: more is not needed to cap, and a
// huge n stays cheap.
func fibonacci(n int, limit float64) float64 {
	a, b := 1.0, 1.0
	for i := 1; i < n && a <= limit && !math.IsInf(a, 1); i++ {
		a, b = b, a+b
	}
	return a
}

// saturate converts f nanoseconds to a Duration, saturating at the bounds.
func saturate(f float64) time.Duration {
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(f)
}

// jitterUnit returns u in [0, 1) from FNV-1a 64 over its inputs, finished
// with MurmurHash3's fmix64 so that inputs differing only in their last
// bytes still spread over the whole range.
func jitterUnit(modelID string, consecutiveFailures int, failingSince time.Time) float64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	word := func(v uint64) {
		for i := 56; i >= 0; i -= 8 {
			h ^= v >> i & 0xff
			h *= prime64
		}
	}
	word(uint64(len(modelID)))
	for i := 0; i < len(modelID); i++ {
		h ^= uint64(modelID[i])
		h *= prime64
	}
	word(uint64(consecutiveFailures))
	word(uint64(failingSince.Unix()))
	word(uint64(failingSince.Nanosecond()))
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return float64(h>>11) / (1 << 53)
}

// Aligned reports whether retries align with the schedule: Align if set,
// else whether the policy has a schedule.
func (p Policy) Aligned() bool {
	if p.Retry.Align != nil {
		return *p.Retry.Align
	}
	return p.Schedule != ""
}

// Stated returns p with every default that p leaves implicit stated, as the
// API shows a policy: the zone (UTC), whether retries align (Aligned), the
// allow-list and the deny-list of error kinds (empty lists, not left out)
// and max_snooze (SnoozeBound). It behaves as p; fields whose default is
// "none" (give_up_after and the other extensions) stay left out.
func (p Policy) Stated() Policy {
	if p.Timezone == "" {
		p.Timezone = time.UTC.String()
	}
	align := p.Aligned()
	p.Retry.Align = &align
	if p.Retry.RetryOn == nil {
		p.Retry.RetryOn = []string{}
	}
	if p.Retry.NonRetryable == nil {
		p.Retry.NonRetryable = []string{}
	}
	if p.MaxSnooze == 0 {
		p.MaxSnooze = Duration(p.SnoozeBound())
	}
	return p
}

// Retryable reports whether a failure of kind may retry; when not, why says
// which rule refused it. The deny-list (non_retryable) wins over the
// allow-list (retry_on).
func (p Policy) Retryable(kind string, retryable bool) (ok bool, why string) {
	switch {
	case !retryable:
		return false, "the worker marked it non-retryable"
	case slices.Contains(p.Retry.NonRetryable, kind):
		return false, fmt.Sprintf("kind %s is in retry.non_retryable", quoteShort(kind))
	case len(p.Retry.RetryOn) > 0 && !slices.Contains(p.Retry.RetryOn, kind):
		return false, fmt.Sprintf("kind %s is not in retry.retry_on", quoteShort(kind))
	}
	return true, ""
}

// Truncation mark of a disabled reason: it ends text that was cut.
const reasonEllipsis = "…"

// Placeholders of disabled_message, and the most bytes each one's value can
// take ({error} is cut to fit).
const (
	phAttempts = "{attempts}"
	phError    = "{error}"
	phSince    = "{since}"

	maxAttemptsBytes = len("-9223372036854775808")
	maxSinceBytes    = len("2006-01-02T15:04:05-07:00")
)

// DisabledReason returns the disabled message with {attempts}, {error} and
// {since} filled in; since is written in RFC 3339 in the policy's time zone
// (UTC if none), and as "" if zero. The default message stands in for an
// empty one. Placeholders inside errMsg are not expanded; errMsg is
// trimmed of surrounding white space.
//
// The reason never exceeds the bound p is bound to (Limits.MaxReasonBytes;
// see WithLimits), and costs time in proportion to that bound whatever the
// inputs. The error text is cut first, at a character boundary and marked
// with "…", so that the template's own words stay whole; only a template
// that does not fit by itself (which validation refuses) is cut too.
//
// An empty error leaves no dangling punctuation: {error} expands to nothing
// and takes with it the brackets or quotes right around it and the spaces
// and separator (: ; , - – —) right before it (right after it, when it
// starts the message): "Refresh disabled after {attempts} failed
// attempt(s): {error}" reads "Refresh disabled after 3 failed attempt(s)".
// Should nothing be left, the default message stands in.
func (p Policy) DisabledReason(attempts int, errMsg string, since time.Time) string {
	msg := p.DisabledMessage
	if msg == "" {
		msg = defaultDisabledMessage
	}
	s := ""
	if !since.IsZero() {
		loc, err := p.location()
		if err != nil {
			loc = time.UTC
		}
		s = since.In(loc).Format(time.RFC3339)
	}
	n := strconv.Itoa(attempts)
	limit := p.maxReason()
	reason := expandReason(msg, limit, n, s, errMsg)
	if msg != defaultDisabledMessage && strings.TrimSpace(reason) == "" {
		reason = expandReason(defaultDisabledMessage, limit, n, s, errMsg)
	}
	return reason
}

// fitReason returns text cut to the disabled reason's bound, marked with
// "…" if it was cut.
func (p Policy) fitReason(text string) string {
	return fitText(text, p.maxReason(), false)
}

// expandReason fills in the placeholders of tmpl within limit bytes (see
// DisabledReason). It reads at most limit bytes of errMsg and as much of
// tmpl as a template that fits can take.
func expandReason(tmpl string, limit int, attempts, since, errMsg string) string {
	cut := false
	if n := limit + len(phAttempts+phError+phSince); len(tmpl) > n {
		tmpl, cut = cutText(tmpl, n), true
		if i := strings.LastIndexByte(tmpl, '{'); i >= 0 && strings.IndexByte(tmpl[i:], '}') < 0 {
			tmpl = tmpl[:i] // a placeholder cut in two is no placeholder
		}
	}
	// The template's text with {attempts} and {since} filled in; holes
	// are the offsets where {error} goes.
	fixed := make([]byte, 0, len(tmpl)+maxAttemptsBytes+maxSinceBytes)
	var holes []int
	for i := 0; i < len(tmpl); {
		j := strings.IndexByte(tmpl[i:], '{')
		if j < 0 {
			fixed = append(fixed, tmpl[i:]...)
			break
		}
		fixed = append(fixed, tmpl[i:i+j]...)
		i += j
		switch rest := tmpl[i:]; {
		case strings.HasPrefix(rest, phAttempts):
			fixed = append(fixed, attempts...)
			i += len(phAttempts)
		case strings.HasPrefix(rest, phSince):
			fixed = append(fixed, since...)
			i += len(phSince)
		case strings.HasPrefix(rest, phError):
			holes = append(holes, len(fixed))
			i += len(phError)
		default:
			fixed = append(fixed, '{')
			i++
		}
	}

	errCut := len(errMsg) > limit
	e := strings.TrimSpace(cutText(errMsg, limit))
	if len(holes) == 0 {
		return fitText(string(fixed), limit, cut)
	}
	if e == "" && !errCut {
		out := dropHoles(fixed, holes)
		if len(bytes.TrimSpace(out)) == 0 {
			return "" // the default message stands in, not a lone "…"
		}
		return fitText(string(out), limit, cut)
	}
	if share := (limit - len(fixed)) / len(holes); errCut || len(e) > share {
		switch {
		case share > len(reasonEllipsis):
			e = strings.TrimRightFunc(cutText(e, share-len(reasonEllipsis)), unicode.IsSpace) + reasonEllipsis
		case share == len(reasonEllipsis):
			e = reasonEllipsis
		default:
			e = ""
		}
	}
	out := make([]byte, 0, len(fixed)+len(holes)*len(e))
	prev := 0
	for _, h := range holes {
		out = append(out, fixed[prev:h]...)
		out = append(out, e...)
		prev = h
	}
	out = append(out, fixed[prev:]...)
	return fitText(string(out), limit, cut)
}

// fitText returns s if it fits in limit bytes and was not cut before,
// else s cut to limit bytes ending with "…".
func fitText(s string, limit int, cut bool) string {
	if !cut && len(s) <= limit {
		return s
	}
	if limit < len(reasonEllipsis) {
		return cutText(s, limit)
	}
	return cutText(s, limit-len(reasonEllipsis)) + reasonEllipsis
}

// cutText returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 character.
func cutText(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for i := n; i > n-utf8.UTFMax && i >= 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n] // not UTF-8 there: cut at n
}

// Brackets and quotes that an empty {error} takes with it.
var reasonBrackets = map[rune]rune{'(': ')', '[': ']', '"': '"', '\'': '\'', '«': '»', '“': '”', '‘': '’'}

// isReasonSeparator reports whether r introduces an {error} that may be
// empty: white space, or : ; , - – —.
func isReasonSeparator(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(":;,-–—", r)
}

// dropHoles returns fixed with the holes of an empty {error} removed along
// with their punctuation (see DisabledReason).
func dropHoles(fixed []byte, holes []int) []byte {
	out := make([]byte, 0, len(fixed))
	prev := 0
	for _, h := range holes {
		out = append(out, fixed[prev:h]...)
		prev = h
		if open, n := utf8.DecodeLastRune(out); n > 0 {
			if closer, ok := reasonBrackets[open]; ok {
				if c, m := utf8.DecodeRune(fixed[h:]); m > 0 && c == closer {
					out, prev = out[:len(out)-n], h+m
				}
			}
		}
		out = bytes.TrimRightFunc(out, isReasonSeparator)
		if len(out) == 0 {
			rest := bytes.TrimLeftFunc(fixed[prev:], isReasonSeparator)
			prev = len(fixed) - len(rest)
		}
	}
	return append(out, fixed[prev:]...)
}

// location loads the policy's time zone; "" is UTC. "Local" is refused: it
// would make a policy mean different things on different hosts.
func (p Policy) location() (*time.Location, error) {
	if p.Timezone == "Local" {
		return nil, errors.New(`must be an IANA time zone name like "Europe/Paris", got "Local"`)
	}
	loc, err := time.LoadLocation(p.Timezone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %s", quoteShort(p.Timezone))
	}
	return loc, nil
}

var (
	strategies   = []string{BackoffImmediate, BackoffFixed, BackoffLinear, BackoffExponential, BackoffFibonacci}
	placeholders = []string{phAttempts, phError, phSince}
	placeholder  = regexp.MustCompile(`\{[^{}]*\}`)
)

// check adds to errs every rule p breaks, until errs is full. Rules about a
// field listed in bad (it failed to decode), or inside one, are skipped:
// its value means nothing. Every check is linear in the size of p, and
// lists longer than their limit are refused whole, without looking at
// their entries.
func (p Policy) check(lim Limits, bad map[string]bool, errs *errorList) {
	c := checker{bad: bad, errorList: errs}
	maxDelay := Duration(lim.MaxDelay)

	scheduleOK := c.text("schedule", p.Schedule) && !c.skip("schedule")
	timezoneOK := c.text("timezone", p.Timezone) && !c.skip("timezone")
	_, tzErr := p.location()
	if p.Schedule != "" && scheduleOK && timezoneOK && tzErr == nil {
		_, err := rrule.Parse(p.Schedule, rrule.Options{Timezone: p.Timezone, Created: time.Unix(0, 0).UTC(), Limits: lim.Schedule})
		if err != nil {
			c.add("schedule", "%s", err)
		}
	}
	if tzErr != nil && timezoneOK {
		c.add("timezone", "%s", tzErr)
	}

	switch {
	case p.Timeout < Duration(lim.MinTimeout):
		c.add("timeout", "must be >= %s, got %s", Duration(lim.MinTimeout), p.Timeout)
	case p.Timeout > Duration(lim.MaxTimeout):
		c.add("timeout", "must be <= %s, got %s", Duration(lim.MaxTimeout), p.Timeout)
	}

	r := p.Retry
	switch {
	case r.Delays != nil && r.Backoff != nil:
		c.add("retry", "set either delays or backoff, not both")
	case r.Delays == nil && r.Backoff == nil && !c.skip("retry.delays") && !c.skip("retry.backoff"):
		c.add("retry", "set delays or backoff")
	}
	if c.length("retry.delays", len(r.Delays), lim.MaxRetries) {
		for i, d := range r.Delays {
			c.between(fmt.Sprintf("retry.delays[%d]", i), d, maxDelay)
		}
	}
	if b := r.Backoff; b != nil {
		known := slices.Contains(strategies, b.Strategy)
		if !known {
			c.add("retry.backoff.strategy", "must be one of %s, got %s", strings.Join(strategies, ", "), quoteShort(b.Strategy))
		}
		switch {
		case b.Strategy == BackoffImmediate && b.Base != 0:
			c.add("retry.backoff.base", "is not used by the immediate strategy")
		case known && b.Strategy != BackoffImmediate && b.Base <= 0:
			c.add("retry.backoff.base", "must be > 0, got %s", b.Base)
		case b.Base > maxDelay:
			c.add("retry.backoff.base", "must be <= %s, got %s", maxDelay, b.Base)
		}
		switch {
		case b.Strategy == BackoffExponential && !(b.Multiplier >= 1):
			c.add("retry.backoff.multiplier", "must be >= 1, got %v", b.Multiplier)
		case known && b.Strategy != BackoffExponential && b.Multiplier != 0:
			c.add("retry.backoff.multiplier", "is only used by the exponential strategy")
		}
		c.between("retry.backoff.max_delay", b.MaxDelay, maxDelay)
		if b.MaxRetries < 0 || b.MaxRetries > lim.MaxRetries {
			c.add("retry.backoff.max_retries", "must be between 0 and %d, got %d", lim.MaxRetries, b.MaxRetries)
		}
	}
	if !(r.Jitter >= 0 && r.Jitter < 1) {
		c.add("retry.jitter", "must be >= 0 and < 1, got %v", r.Jitter)
	}
	c.kinds("retry.retry_on", r.RetryOn, lim)
	c.kinds("retry.non_retryable", r.NonRetryable, lim)

	switch p.OnExhausted {
	case ExhaustedDisable:
	case ExhaustedWaitNext:
		if p.Schedule == "" && !c.skip("schedule") {
			c.add("on_exhausted", "wait_next needs a schedule")
		}
	default:
		c.add("on_exhausted", "must be %q or %q, got %s", ExhaustedDisable, ExhaustedWaitNext, quoteShort(p.OnExhausted))
	}
	c.between("give_up_after", p.GiveUpAfter, Duration(lim.MaxGiveUpAfter))
	c.template("disabled_message", p.DisabledMessage, lim)
	p.checkExtensions(&c, lim)
}

// checkExtensions adds the rules of the section 6 fields. Their zero value
// means "not used"; ParsePolicy refuses a zero written out (the decoder
// reports "must be > 0, got 0s"), since it would read back as left out.
func (p Policy) checkExtensions(c *checker, lim Limits) {
	long := Duration(lim.MaxGiveUpAfter)
	c.optional("max_age", p.MaxAge, long)
	if db := p.TriggerDebounce; p.Debounced() {
		c.positive("trigger_debounce.quiet", db.Quiet, Duration(lim.MaxDelay))
		c.positive("trigger_debounce.max_wait", db.MaxWait, Duration(lim.MaxDelay))
		if db.Quiet > db.MaxWait && db.MaxWait > 0 && !c.skip("trigger_debounce.max_wait") {
			c.add("trigger_debounce.quiet", "must be <= max_wait (%s), got %s", db.MaxWait, db.Quiet)
		}
	}
	c.optional("max_snooze", p.MaxSnooze, long)
	if c.optional("spread", p.Spread, Duration(lim.MaxDelay)) && p.Spread > 0 {
		switch {
		case p.Schedule == "" && !c.skip("schedule"):
			c.add("spread", "needs a schedule")
		case time.Duration(p.Spread)%time.Second != 0:
			c.add("spread", "must be a whole number of seconds, got %s", p.Spread)
		}
	}
	if c.optional("max_lateness", p.MaxLateness, long) && p.MaxLateness > 0 && p.Schedule == "" && !c.skip("schedule") {
		c.add("max_lateness", "needs a schedule")
	}
}

// checker collects broken rules.
type checker struct {
	*errorList
	bad map[string]bool
}

// skip reports whether field, or a field that contains it, failed to decode.
func (c *checker) skip(field string) bool {
	if len(c.bad) == 0 {
		return false
	}
	for f := field; f != ""; {
		if c.bad[f] {
			return true
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return false
}

func (c *checker) add(field, format string, args ...any) {
	if !c.skip(field) {
		c.errorList.add(field, format, args...)
	}
}

// between checks 0 <= d <= limit.
func (c *checker) between(field string, d, limit Duration) {
	switch {
	case d < 0:
		c.add(field, "must be >= 0, got %s", d)
	case d > limit:
		c.add(field, "must be <= %s, got %s", limit, d)
	}
}

// optional checks an optional duration, whose 0 means "not used":
// 0 <= d <= limit, with the rule of a value that must be > 0 when set. It
// reports whether d is within its bounds.
func (c *checker) optional(field string, d, limit Duration) bool {
	switch {
	case d < 0:
		c.add(field, "must be > 0, got %s", d)
	case d > limit:
		c.add(field, "must be <= %s, got %s", limit, d)
	default:
		return true
	}
	return false
}

// positive checks 0 < d <= limit.
func (c *checker) positive(field string, d, limit Duration) {
	if d == 0 {
		c.add(field, "must be > 0, got %s", d)
		return
	}
	c.optional(field, d, limit)
}

// length checks that a list has at most max entries, and reports whether
// its entries are worth checking one by one.
func (c *checker) length(field string, n, max int) bool {
	if n > max {
		c.add(field, "must have at most %d entries, got %d", max, n)
		return false
	}
	return !c.full()
}

// text checks that s holds no NUL and only valid UTF-8, which a store
// cannot keep, and reports whether it does.
func (c *checker) text(field, s string) bool {
	if rule := textRule(s); rule != "" {
		c.add(field, "%s", rule)
		return false
	}
	return true
}

// kinds checks a list of error kinds.
func (c *checker) kinds(field string, kinds []string, lim Limits) {
	if !c.length(field, len(kinds), lim.MaxKinds) {
		return
	}
	for i, k := range kinds {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case len(k) > lim.MaxKindBytes:
			c.add(f, "must be at most %d bytes, got %d", lim.MaxKindBytes, len(k))
		case strings.TrimSpace(k) == "":
			c.add(f, "must not be empty")
		default:
			c.text(f, k)
		}
	}
}

// template checks the disabled_message template: its length, its
// placeholders (known ones, each at most once) and the length of its
// expansion before the error text goes in.
func (c *checker) template(field, msg string, lim Limits) {
	if len(msg) > lim.MaxMessageBytes {
		// Too long to be worth reading further.
		c.add(field, "must be at most %d bytes, got %d", lim.MaxMessageBytes, len(msg))
		return
	}
	if !c.text(field, msg) {
		return
	}
	unknown := map[string]bool{}
	for _, ph := range placeholder.FindAllString(msg, -1) {
		if !slices.Contains(placeholders, ph) && !unknown[ph] {
			unknown[ph] = true
			c.add(field, "unknown placeholder %s; use %s", quoteShort(ph), strings.Join(placeholders, ", "))
		}
	}
	expanded := len(msg)
	for _, ph := range placeholders {
		n := strings.Count(msg, ph)
		if n > 1 {
			c.add(field, "must contain %s at most once, got %d", ph, n)
		}
		switch ph {
		case phAttempts:
			expanded += n * (maxAttemptsBytes - len(ph))
		case phSince:
			expanded += n * (maxSinceBytes - len(ph))
		case phError:
			expanded -= n * len(ph)
		}
	}
	if expanded > lim.MaxReasonBytes {
		c.add(field, "must expand to at most %d bytes (the limit of a disabled reason), got up to %d before the error text",
			lim.MaxReasonBytes, expanded)
	}
}

// textRule returns the rule a string that a store cannot keep breaks: no
// NUL, valid UTF-8. It returns "" for a good string.
func textRule(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return `must not contain NUL (\u0000)`
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	}
	return ""
}

// jsonTextRule is textRule for a JSON string as written: encoding/json
// silently replaces invalid UTF-8 and lone surrogate escapes (\ud800) with
// U+FFFD, which this refuses. raw is valid JSON.
func jsonTextRule(raw []byte) string {
	if !utf8.Valid(raw) {
		return "must be valid UTF-8"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // a one-letter escape: skip its letter
			continue
		}
		r := hex4(raw[i+2 : i+6])
		i += 5
		switch {
		case r == 0:
			return `must not contain NUL (\u0000)`
		case r >= 0xd800 && r < 0xdc00: // a high surrogate needs a low one
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo := hex4(raw[i+3 : i+7]); lo >= 0xdc00 && lo < 0xe000 {
					i += 6
					continue
				}
			}
			return "must be valid UTF-8 (lone surrogate " + string(raw[i-5:i+1]) + ")"
		case r >= 0xdc00 && r < 0xe000:
			return "must be valid UTF-8 (lone surrogate " + string(raw[i-5:i+1]) + ")"
		}
	}
	return ""
}

// hex4 reads four hexadecimal digits, as found in valid JSON.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// policyDecoder reads a policy from JSON, member by member, so that it can
// name the path of every unknown or ill-typed field and tell a field left
// out from one set to its zero value. Once errs is full it decodes no more
// values: it only walks the members of the objects it is in to count the
// unknown and repeated ones.
type policyDecoder struct {
	lim  Limits
	errs errorList
	// bad holds the paths of the fields that failed to decode.
	bad map[string]bool
}

func (d *policyDecoder) fail(path, rule string) {
	if !d.errs.full() {
		d.bad[path] = true
	}
	d.errs.add(path, "%s", rule)
}

// policy decodes data and applies the defaults.
func (d *policyDecoder) policy(data []byte) Policy {
	lim := d.lim
	var p Policy
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		rule := "invalid JSON: " + err.Error()
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			rule += fmt.Sprintf(" (at byte %d)", se.Offset)
		}
		d.fail("", rule)
		return p
	}
	var hasTimeout, hasDelays, hasNonRetryable bool
	var hasMultiplier, hasMaxDelay, hasMaxRetries bool
	d.object("", data, map[string]func(string, json.RawMessage){
		"schedule": func(path string, v json.RawMessage) { d.str(path, v, &p.Schedule) },
		"timezone": func(path string, v json.RawMessage) { d.str(path, v, &p.Timezone) },
		"timeout": func(path string, v json.RawMessage) {
			hasTimeout = d.duration(path, v, &p.Timeout)
		},
		"retry": func(path string, v json.RawMessage) {
			d.object(path, v, map[string]func(string, json.RawMessage){
				"delays": func(path string, v json.RawMessage) {
					hasDelays = d.array(path, v, lim.MaxRetries, func(path string, v json.RawMessage) {
						var x Duration
						d.duration(path, v, &x)
						p.Retry.Delays = append(p.Retry.Delays, x)
					})
					if hasDelays && p.Retry.Delays == nil {
						p.Retry.Delays = []Duration{}
					}
				},
				"backoff": func(path string, v json.RawMessage) {
					b := new(Backoff)
					ok := d.object(path, v, map[string]func(string, json.RawMessage){
						"strategy": func(path string, v json.RawMessage) { d.str(path, v, &b.Strategy) },
						"base":     func(path string, v json.RawMessage) { d.duration(path, v, &b.Base) },
						"multiplier": func(path string, v json.RawMessage) {
							hasMultiplier = d.value(path, v, &b.Multiplier, "a number")
						},
						"max_delay": func(path string, v json.RawMessage) {
							hasMaxDelay = d.duration(path, v, &b.MaxDelay)
						},
						"max_retries": func(path string, v json.RawMessage) {
							hasMaxRetries = d.value(path, v, &b.MaxRetries, "an integer")
						},
					})
					if ok {
						p.Retry.Backoff = b
					}
				},
				"jitter": func(path string, v json.RawMessage) { d.value(path, v, &p.Retry.Jitter, "a number") },
				"align": func(path string, v json.RawMessage) {
					var a bool
					if d.value(path, v, &a, "true or false") {
						p.Retry.Align = &a
					}
				},
				"retry_on": func(path string, v json.RawMessage) { d.strs(path, v, &p.Retry.RetryOn) },
				"non_retryable": func(path string, v json.RawMessage) {
					hasNonRetryable = d.strs(path, v, &p.Retry.NonRetryable)
				},
			})
		},
		"on_exhausted":     func(path string, v json.RawMessage) { d.str(path, v, &p.OnExhausted) },
		"give_up_after":    func(path string, v json.RawMessage) { d.duration(path, v, &p.GiveUpAfter) },
		"disabled_message": func(path string, v json.RawMessage) { d.str(path, v, &p.DisabledMessage) },
		"max_age":          func(path string, v json.RawMessage) { d.optional(path, v, &p.MaxAge) },
		"trigger_debounce": func(path string, v json.RawMessage) {
			var db Debounce
			var hasQuiet, hasMaxWait bool
			ok := d.object(path, v, map[string]func(string, json.RawMessage){
				"quiet":    func(path string, v json.RawMessage) { hasQuiet = d.duration(path, v, &db.Quiet) },
				"max_wait": func(path string, v json.RawMessage) { hasMaxWait = d.duration(path, v, &db.MaxWait) },
			})
			if !ok {
				return
			}
			for _, m := range []struct {
				name string
				has  bool
			}{{"quiet", hasQuiet}, {"max_wait", hasMaxWait}} {
				if f := path + "." + m.name; !m.has && !d.bad[f] {
					d.fail(f, "required")
				}
			}
			p.TriggerDebounce = db
			if !p.Debounced() && hasQuiet && hasMaxWait { // zeros would read back as left out
				d.fail(path+".quiet", "must be > 0, got 0s")
				d.fail(path+".max_wait", "must be > 0, got 0s")
			}
		},
		"max_snooze":   func(path string, v json.RawMessage) { d.optional(path, v, &p.MaxSnooze) },
		"spread":       func(path string, v json.RawMessage) { d.optional(path, v, &p.Spread) },
		"max_lateness": func(path string, v json.RawMessage) { d.optional(path, v, &p.MaxLateness) },
	})

	// A default never breaks a limit: tighter limits shrink the defaults.
	if !hasTimeout {
		p.Timeout = min(max(defaultTimeout, Duration(lim.MinTimeout)), Duration(lim.MaxTimeout))
	}
	r := &p.Retry
	if !hasDelays && r.Backoff == nil && !d.bad["retry.backoff"] {
		r.Delays = defaultDelays()
		r.Delays = r.Delays[:min(len(r.Delays), lim.MaxRetries)]
		for i := range r.Delays {
			r.Delays[i] = min(r.Delays[i], Duration(lim.MaxDelay))
		}
	}
	if b := r.Backoff; b != nil {
		if !hasMultiplier && b.Strategy == BackoffExponential {
			b.Multiplier = defaultBackoffMultiplier
		}
		if !hasMaxDelay {
			b.MaxDelay = Duration(lim.MaxDelay)
		}
		if !hasMaxRetries {
			b.MaxRetries = min(defaultBackoffMaxRetries, lim.MaxRetries)
		}
	}
	if len(r.RetryOn) == 0 {
		r.RetryOn = nil
	}
	switch {
	case hasNonRetryable && r.NonRetryable == nil:
		r.NonRetryable = []string{}
	case hasNonRetryable:
	case r.RetryOn == nil:
		r.NonRetryable = slices.DeleteFunc(defaultNonRetryable(), func(k string) bool { return len(k) > lim.MaxKindBytes })
		r.NonRetryable = r.NonRetryable[:min(len(r.NonRetryable), lim.MaxKinds)]
	default:
		// An allow-list is the caller's whole statement: the default
		// deny-list does not apply to it.
		r.NonRetryable = []string{}
	}
	if p.OnExhausted == "" {
		p.OnExhausted = ExhaustedDisable
	}
	if p.DisabledMessage == "" {
		p.DisabledMessage = defaultDisabledMessage
	}
	return p
}

// object calls the function of fields named like each member of the JSON
// object v, in order, with the member's path. It reports members that are
// unknown or repeated, and reports whether v is an object. null is no
// object, and no error.
func (d *policyDecoder) object(path string, v json.RawMessage, fields map[string]func(string, json.RawMessage)) bool {
	if isNull(v) {
		return false
	}
	if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
		d.fail(path, "must be an object, got "+shortJSON(v))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	if _, err := dec.Token(); err != nil { // '{'
		d.fail(path, "invalid JSON: "+err.Error())
		return false
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		var member json.RawMessage
		if err == nil {
			err = dec.Decode(&member)
		}
		if err != nil { // not reached: data was checked to be valid JSON
			d.fail(path, "invalid JSON: "+err.Error())
			return false
		}
		name, _ := tok.(string)
		field, known := fields[name]
		switch {
		case !known:
			d.failMember(path, name, "unknown field")
		case seen[name]:
			d.failMember(path, name, "duplicate field")
		default:
			seen[name] = true
			if !d.errs.full() {
				field(memberPath(path, name), member)
			}
		}
	}
	return true
}

// failMember reports a broken rule of member name of the object at path;
// past the cap it only counts it, without building its path.
func (d *policyDecoder) failMember(path, name, rule string) {
	if d.errs.full() {
		d.errs.more++
		return
	}
	d.fail(memberPath(path, name), rule)
}

// memberPath returns the path of member name of the object at path. A
// name too long to read is shortened.
func memberPath(path, name string) string {
	const maxName = 64
	if len(name) > maxName {
		name = cutText(name, maxName-3) + "..."
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// array calls elem for each element of the JSON array v, with its path, and
// reports whether v is an array (null is not, and no error). An array of
// more than max elements is refused whole: its elements are not decoded.
func (d *policyDecoder) array(path string, v json.RawMessage, max int, elem func(string, json.RawMessage)) bool {
	if isNull(v) {
		return false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		d.fail(path, "must be an array, got "+shortJSON(v))
		return false
	}
	if len(elems) > max {
		d.fail(path, fmt.Sprintf("must have at most %d entries, got %d", max, len(elems)))
		return true
	}
	for i, e := range elems {
		if d.errs.full() {
			break
		}
		elem(path+"["+strconv.Itoa(i)+"]", e)
	}
	return true
}

// value decodes v into dst, a pointer to a plain type described by what
// ("a number"). It reports whether v was decoded: null is left out.
func (d *policyDecoder) value(path string, v json.RawMessage, dst any, what string) bool {
	if isNull(v) {
		return false
	}
	if err := json.Unmarshal(v, dst); err != nil {
		d.fail(path, "must be "+what+", got "+shortJSON(v))
		return false
	}
	return true
}

// str decodes a string that a store can keep (see jsonTextRule).
func (d *policyDecoder) str(path string, v json.RawMessage, dst *string) bool {
	var s string
	if !d.value(path, v, &s, "a string") {
		return false
	}
	if rule := jsonTextRule(v); rule != "" {
		d.fail(path, rule)
		return false
	}
	*dst = s
	return true
}

func (d *policyDecoder) duration(path string, v json.RawMessage, dst *Duration) bool {
	if isNull(v) {
		return false
	}
	x, err := decodeDuration(v)
	if err != nil {
		d.fail(path, err.Error())
		return false
	}
	*dst = x
	return true
}

// optional decodes an optional duration, whose 0 would read back as left
// out: a 0 written out is refused.
func (d *policyDecoder) optional(path string, v json.RawMessage, dst *Duration) {
	if d.duration(path, v, dst) && *dst == 0 {
		d.fail(path, "must be > 0, got 0s")
	}
}

// strs decodes an array of at most lim.MaxKinds strings; it reports whether
// v was an array.
func (d *policyDecoder) strs(path string, v json.RawMessage, dst *[]string) bool {
	return d.array(path, v, d.lim.MaxKinds, func(path string, v json.RawMessage) {
		var s string
		d.str(path, v, &s)
		*dst = append(*dst, s)
	})
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
