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

	"github.com/freshen-dev/freshen/rrule"
)

// Policy is a model's refresh policy (DESIGN.md section 2). Build one with
// ParsePolicy, which applies defaults and validates it. The JSON form of a
// parsed policy states every default, so it parses back to the same policy.
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
	RetryOn []string `json:"retry_on,omitempty"`
	// NonRetryable lists the error kinds that never retry. An empty,
	// non-nil list is kept as given (nothing is excluded).
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
	defaultDisabledMessage   = "Refresh disabled after {attempts} failed attempt(s): {error}"
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
// Defaults that would break lim are shrunk to fit it: under a limit of 3
// retries, the default delays are ["0s", "1m", "5m"].
//
// Unknown fields are refused. Any error is a *ValidationError that lists
// every broken rule, each named by its field path, e.g.
// "retry.backoff.multiplier: must be >= 1, got 0.5".
func ParsePolicy(data []byte, lim Limits) (Policy, error) {
	d := policyDecoder{bad: map[string]bool{}}
	p := d.policy(data, lim.orDefault())
	errs := d.errs
	if !d.bad[""] { // a policy that is no JSON object has no rules to check
		errs = append(errs, p.check(lim, d.bad)...)
	}
	if len(errs) > 0 {
		return Policy{}, &ValidationError{Fields: errs}
	}
	return p, nil
}

// Validate checks p against lim and returns a *ValidationError listing
// every broken rule, or nil. It applies no defaults: a Policy built in code
// should start from DefaultPolicy.
func (p Policy) Validate(lim Limits) error {
	if errs := p.check(lim, nil); len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
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
// strategy's delay capped at max_delay, then spread by the jitter. The
// jitter is a pure function of (modelID, consecutiveFailures,
// failingSince), so the same inputs give the same delay. Delay never
// overflows and is never negative; an n beyond the delays list waits the
// last delay, and an n below 1 counts as 1.
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
	return d
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

// Retryable reports whether a failure of kind may retry; when not, why says
// which rule refused it.
func (p Policy) Retryable(kind string, retryable bool) (ok bool, why string) {
	switch {
	case !retryable:
		return false, "the worker marked it non-retryable"
	case slices.Contains(p.Retry.NonRetryable, kind):
		return false, fmt.Sprintf("kind %q is in retry.non_retryable", kind)
	case len(p.Retry.RetryOn) > 0 && !slices.Contains(p.Retry.RetryOn, kind):
		return false, fmt.Sprintf("kind %q is not in retry.retry_on", kind)
	}
	return true, ""
}

// DisabledReason returns the disabled message with {attempts}, {error} and
// {since} filled in; since is written in RFC 3339 in the policy's time zone
// (UTC if none), and as "" if zero. The default message stands in for an
// empty one. Placeholders inside errMsg are not expanded.
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
	return strings.NewReplacer("{attempts}", strconv.Itoa(attempts), "{error}", errMsg, "{since}", s).Replace(msg)
}

// location loads the policy's time zone; "" is UTC. "Local" is refused: it
// would make a policy mean different things on different hosts.
func (p Policy) location() (*time.Location, error) {
	if p.Timezone == "Local" {
		return nil, errors.New(`must be an IANA time zone name like "Europe/Paris", got "Local"`)
	}
	loc, err := time.LoadLocation(p.Timezone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", p.Timezone)
	}
	return loc, nil
}

var (
	strategies   = []string{BackoffImmediate, BackoffFixed, BackoffLinear, BackoffExponential, BackoffFibonacci}
	placeholders = []string{"{attempts}", "{error}", "{since}"}
	placeholder  = regexp.MustCompile(`\{[^{}]*\}`)
)

// check returns every rule p breaks. Rules about a field listed in bad (it
// failed to decode), or inside one, are skipped: its value means nothing.
func (p Policy) check(lim Limits, bad map[string]bool) []FieldError {
	lim = lim.orDefault()
	c := checker{bad: bad}
	maxDelay := Duration(lim.MaxDelay)

	_, tzErr := p.location()
	if p.Schedule != "" && tzErr == nil && !c.skip("timezone") {
		_, err := rrule.Parse(p.Schedule, rrule.Options{Timezone: p.Timezone, Created: time.Unix(0, 0).UTC()})
		if err != nil {
			c.add("schedule", "%s", err)
		}
	}
	if tzErr != nil {
		c.add("timezone", "%s", tzErr)
	}

	switch {
	case p.Timeout <= 0:
		c.add("timeout", "must be > 0, got %s", p.Timeout)
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
	for i, d := range r.Delays {
		c.between(fmt.Sprintf("retry.delays[%d]", i), d, maxDelay)
	}
	if len(r.Delays) > lim.MaxRetries {
		c.add("retry.delays", "must have at most %d entries, got %d", lim.MaxRetries, len(r.Delays))
	}
	if b := r.Backoff; b != nil {
		known := slices.Contains(strategies, b.Strategy)
		if !known {
			c.add("retry.backoff.strategy", "must be one of %s, got %q", strings.Join(strategies, ", "), b.Strategy)
		}
		switch {
		case b.Strategy == BackoffImmediate && b.Base != 0:
			c.add("retry.backoff.base", "is not used by the immediate strategy")
		case known && b.Strategy != BackoffImmediate && b.Base <= 0:
			c.add("retry.backoff.base", "must be > 0, got %s", b.Base)
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
	for i, k := range r.RetryOn {
		if strings.TrimSpace(k) == "" {
			c.add(fmt.Sprintf("retry.retry_on[%d]", i), "must not be empty")
		}
	}
	for i, k := range r.NonRetryable {
		if strings.TrimSpace(k) == "" {
			c.add(fmt.Sprintf("retry.non_retryable[%d]", i), "must not be empty")
		}
	}

	switch p.OnExhausted {
	case ExhaustedDisable:
	case ExhaustedWaitNext:
		if p.Schedule == "" && !c.skip("schedule") {
			c.add("on_exhausted", "wait_next needs a schedule")
		}
	default:
		c.add("on_exhausted", "must be %q or %q, got %q", ExhaustedDisable, ExhaustedWaitNext, p.OnExhausted)
	}
	if p.GiveUpAfter < 0 {
		c.add("give_up_after", "must be >= 0, got %s", p.GiveUpAfter)
	}
	var seen []string
	for _, ph := range placeholder.FindAllString(p.DisabledMessage, -1) {
		if !slices.Contains(placeholders, ph) && !slices.Contains(seen, ph) {
			seen = append(seen, ph)
			c.add("disabled_message", "unknown placeholder %q; use %s", ph, strings.Join(placeholders, ", "))
		}
	}
	return c.errs
}

// checker collects broken rules.
type checker struct {
	errs []FieldError
	bad  map[string]bool
}

// skip reports whether field, or a field that contains it, failed to decode.
func (c *checker) skip(field string) bool {
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
		c.errs = append(c.errs, FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
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

// policyDecoder reads a policy from JSON, member by member, so that it can
// name the path of every unknown or ill-typed field and tell a field left
// out from one set to its zero value.
type policyDecoder struct {
	errs []FieldError
	// bad holds the paths of the fields that failed to decode.
	bad map[string]bool
}

func (d *policyDecoder) fail(path, rule string) {
	d.errs = append(d.errs, FieldError{Field: path, Rule: rule})
	d.bad[path] = true
}

// policy decodes data and applies the defaults.
func (d *policyDecoder) policy(data []byte, lim Limits) Policy {
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
					hasDelays = d.array(path, v, func(path string, v json.RawMessage) {
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
	})

	// A default never breaks a limit: tighter limits shrink the defaults.
	if !hasTimeout {
		p.Timeout = min(defaultTimeout, Duration(lim.MaxTimeout))
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
	if !hasNonRetryable {
		r.NonRetryable = defaultNonRetryable()
	} else if r.NonRetryable == nil {
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
	seen := map[string]bool{}
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
		p := name
		if path != "" {
			p = path + "." + name
		}
		field, known := fields[name]
		switch {
		case !known:
			d.fail(p, "unknown field")
		case seen[name]:
			d.fail(p, "duplicate field")
		default:
			seen[name] = true
			field(p, member)
		}
	}
	return true
}

// array calls elem for each element of the JSON array v, with its path, and
// reports whether v is an array (null is not, and no error).
func (d *policyDecoder) array(path string, v json.RawMessage, elem func(string, json.RawMessage)) bool {
	if isNull(v) {
		return false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		d.fail(path, "must be an array, got "+shortJSON(v))
		return false
	}
	for i, e := range elems {
		elem(fmt.Sprintf("%s[%d]", path, i), e)
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

func (d *policyDecoder) str(path string, v json.RawMessage, dst *string) bool {
	return d.value(path, v, dst, "a string")
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

// strs decodes an array of strings; it reports whether v was one.
func (d *policyDecoder) strs(path string, v json.RawMessage, dst *[]string) bool {
	return d.array(path, v, func(path string, v json.RawMessage) {
		var s string
		d.str(path, v, &s)
		*dst = append(*dst, s)
	})
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
