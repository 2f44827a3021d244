package refresh_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func dur(d time.Duration) refresh.Duration { return refresh.Duration(d) }

func ptr[T any](v T) *T { return &v }

// fieldErrors parses data and returns the broken rules, nil if none.
func fieldErrors(t *testing.T, data string, lim refresh.Limits) []refresh.FieldError {
	t.Helper()
	_, err := refresh.ParsePolicy([]byte(data), lim)
	if err == nil {
		return nil
	}
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v), "want a *ValidationError, got %T: %v", err, err)
	require.NotEmpty(t, v.Fields)
	return v.Fields
}

func TestParsePolicyDefaults(t *testing.T) {
	t.Parallel()
	def := refresh.DefaultPolicy()
	with := func(f func(p *refresh.Policy)) refresh.Policy {
		p := refresh.DefaultPolicy()
		f(&p)
		return p
	}
	tests := []struct {
		name string
		in   string
		lim  refresh.Limits
		want refresh.Policy
	}{
		{name: "empty object", in: `{}`, want: def},
		{name: "null", in: `null`, want: def},
		{name: "nulls are left out", in: `{"schedule": null, "timeout": null, "retry": {"delays": null,
			"backoff": null, "jitter": null, "align": null, "retry_on": null, "non_retryable": null},
			"on_exhausted": null, "give_up_after": null, "disabled_message": null}`, want: def},
		{name: "the documented example", in: `{
			"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
			"timezone": "Europe/Paris",
			"timeout": "1h",
			"retry": {"delays": ["0s", "1m", "5m", "15m", "30m", "1h"], "jitter": 0.0, "align": true,
				"retry_on": [], "non_retryable": ["validation", "not_found", "unauthorized", "forbidden"]},
			"on_exhausted": "disable",
			"give_up_after": "P7D",
			"disabled_message": "Refresh disabled after {attempts} failed attempt(s): {error}"}`,
			want: with(func(p *refresh.Policy) {
				p.Schedule = "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16"
				p.Timezone = "Europe/Paris"
				p.Retry.Align = ptr(true)
				p.GiveUpAfter = dur(7 * 24 * time.Hour)
				p.DisabledMessage = "Refresh disabled after {attempts} failed attempt(s): {error}" // named: not the default
			})},
		{name: "retry without delays or backoff gets the default delays", in: `{"retry": {"jitter": 0.2}}`,
			want: with(func(p *refresh.Policy) { p.Retry.Jitter = 0.2 })},
		{name: "explicit empty delays mean no retries", in: `{"retry": {"delays": []}}`,
			want: with(func(p *refresh.Policy) { p.Retry.Delays = []refresh.Duration{} })},
		{name: "explicit empty non_retryable stays empty", in: `{"retry": {"non_retryable": []}}`,
			want: with(func(p *refresh.Policy) { p.Retry.NonRetryable = []string{} })},
		{name: "empty retry_on is nil", in: `{"retry": {"retry_on": []}}`, want: def},
		{name: "retry_on kept, without the default non_retryable", in: `{"retry": {"retry_on": ["http_503", "timeout"]}}`,
			want: with(func(p *refresh.Policy) {
				p.Retry.RetryOn = []string{"http_503", "timeout"}
				p.Retry.NonRetryable = []string{}
			})},
		{name: "retry_on a default non_retryable kind retries it", in: `{"retry": {"retry_on": ["validation"]}}`,
			want: with(func(p *refresh.Policy) {
				p.Retry.RetryOn = []string{"validation"}
				p.Retry.NonRetryable = []string{}
			})},
		{name: "retry_on with an explicit non_retryable keeps both", in: `{"retry": {"retry_on": ["validation", "quota"], "non_retryable": ["quota"]}}`,
			want: with(func(p *refresh.Policy) {
				p.Retry.RetryOn = []string{"validation", "quota"}
				p.Retry.NonRetryable = []string{"quota"}
			})},
		{name: "retry_on null keeps the default non_retryable", in: `{"retry": {"retry_on": null}}`, want: def},
		{name: "explicit empty non_retryable with retry_on stays empty", in: `{"retry": {"retry_on": ["x"], "non_retryable": []}}`,
			want: with(func(p *refresh.Policy) {
				p.Retry.RetryOn = []string{"x"}
				p.Retry.NonRetryable = []string{}
			})},
		{name: "align false kept", in: `{"retry": {"align": false}}`,
			want: with(func(p *refresh.Policy) { p.Retry.Align = ptr(false) })},
		{name: "empty strings take the default", in: `{"on_exhausted": "", "disabled_message": ""}`, want: def},
		{name: "ISO 8601 durations", in: `{"timeout": "PT30M", "retry": {"delays": ["PT0S", "PT1M30S", "P1DT2H"]}, "give_up_after": "P2W"}`,
			want: with(func(p *refresh.Policy) {
				p.Timeout = dur(30 * time.Minute)
				p.Retry.Delays = []refresh.Duration{0, dur(90 * time.Second), dur(26 * time.Hour)}
				p.GiveUpAfter = dur(14 * 24 * time.Hour)
			})},
		{name: "exponential backoff defaults", in: `{"retry": {"backoff": {"strategy": "exponential", "base": "1m"}}}`,
			lim: refresh.Limits{MaxDelay: 2 * time.Hour},
			want: with(func(p *refresh.Policy) {
				p.Retry.Delays = nil
				p.Retry.Backoff = &refresh.Backoff{Strategy: "exponential", Base: dur(time.Minute), Multiplier: 2,
					MaxDelay: dur(2 * time.Hour), MaxRetries: 5}
			}).WithLimits(refresh.Limits{MaxDelay: 2 * time.Hour})},
		{name: "fixed backoff has no multiplier", in: `{"retry": {"backoff": {"strategy": "fixed", "base": "PT5M", "max_retries": 0}}}`,
			want: with(func(p *refresh.Policy) {
				p.Retry.Delays = nil
				p.Retry.Backoff = &refresh.Backoff{Strategy: "fixed", Base: dur(5 * time.Minute),
					MaxDelay: dur(30 * 24 * time.Hour), MaxRetries: 0}
			})},
		{name: "max_delay 0 is kept", in: `{"retry": {"backoff": {"strategy": "immediate", "max_delay": "0s", "max_retries": 3}}}`,
			want: with(func(p *refresh.Policy) {
				p.Retry.Delays = nil
				p.Retry.Backoff = &refresh.Backoff{Strategy: "immediate", MaxRetries: 3}
			})},
		{name: "defaults shrink to tight limits", in: `{"retry": {"backoff": {"strategy": "immediate"}}}`,
			lim: refresh.Limits{MaxRetries: 2, MaxDelay: 3 * time.Minute, MaxTimeout: 10 * time.Minute},
			want: with(func(p *refresh.Policy) {
				p.Timeout = dur(10 * time.Minute)
				p.Retry.Delays = nil
				p.Retry.Backoff = &refresh.Backoff{Strategy: "immediate", MaxDelay: dur(3 * time.Minute), MaxRetries: 2}
			}).WithLimits(refresh.Limits{MaxDelay: 3 * time.Minute})},
		{name: "default timeout grows to a higher minimum", in: `{}`,
			lim:  refresh.Limits{MinTimeout: 2 * time.Hour},
			want: with(func(p *refresh.Policy) { p.Timeout = dur(2 * time.Hour) })},
		{name: "default delays shrink to tight limits", in: `{}`,
			lim: refresh.Limits{MaxRetries: 4, MaxDelay: 3 * time.Minute},
			want: with(func(p *refresh.Policy) {
				p.Retry.Delays = []refresh.Duration{0, dur(time.Minute), dur(3 * time.Minute), dur(3 * time.Minute)}
			}).WithLimits(refresh.Limits{MaxDelay: 3 * time.Minute})},
		{name: "wait_next with a schedule", in: `{"schedule": "FREQ=HOURLY;INTERVAL=2", "on_exhausted": "wait_next"}`,
			want: with(func(p *refresh.Policy) {
				p.Schedule = "FREQ=HOURLY;INTERVAL=2"
				p.OnExhausted = refresh.ExhaustedWaitNext
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := refresh.ParsePolicy([]byte(tt.in), tt.lim)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDefaultPolicy(t *testing.T) {
	t.Parallel()
	p := refresh.DefaultPolicy()
	require.NoError(t, p.Validate(refresh.DefaultLimits()))
	require.Equal(t, refresh.Duration(time.Hour), p.Timeout)
	require.Equal(t, 6, p.MaxRetries())
	require.False(t, p.Aligned())

	// Each call returns its own slices.
	p.Retry.Delays[0] = dur(time.Hour)
	p.Retry.NonRetryable[0] = "changed"
	q := refresh.DefaultPolicy()
	require.Equal(t, refresh.Duration(0), q.Retry.Delays[0])
	require.Equal(t, "validation", q.Retry.NonRetryable[0])
}

func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	require.Equal(t, refresh.Limits{MaxRetries: 100, MaxDelay: 30 * 24 * time.Hour, MaxTimeout: 7 * 24 * time.Hour,
		MinTimeout: time.Second, MaxGiveUpAfter: 365 * 24 * time.Hour, MinInterval: time.Minute,
		MaxMessageBytes: 1000, MaxReasonBytes: 4096, MaxKinds: 100, MaxKindBytes: 64,
		MaxPayloadBytes: 64 << 10, MaxPayloadDepth: 32, MaxFieldErrors: 20},
		refresh.DefaultLimits())
}

// kinds returns a JSON list of n distinct error kinds.
func kinds(n int) string {
	k := make([]string, n)
	for i := range k {
		k[i] = fmt.Sprintf("kind_%d", i)
	}
	b, _ := json.Marshal(k)
	return string(b)
}

func TestParsePolicyRules(t *testing.T) {
	t.Parallel()
	small := refresh.Limits{MaxRetries: 3, MaxDelay: time.Hour, MaxTimeout: 2 * time.Hour}
	fe := func(field, rule string) []refresh.FieldError { return []refresh.FieldError{{Field: field, Rule: rule}} }
	backoff := func(fields string) string {
		return `{"retry": {"backoff": {` + fields + `}}}`
	}
	tests := []struct {
		name string
		in   string
		lim  refresh.Limits
		want []refresh.FieldError // nil: valid
	}{
		// schedule and timezone
		{name: "bare rrule", in: `{"schedule": "FREQ=DAILY;BYHOUR=6,16"}`},
		{name: "full text with zone", in: `{"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16"}`},
		{name: "timezone ok", in: `{"timezone": "Europe/Paris", "schedule": "FREQ=DAILY"}`},
		{name: "timezone UTC", in: `{"timezone": "UTC"}`},
		{name: "timezone unknown", in: `{"timezone": "Mars/Base"}`, want: fe("timezone", `unknown time zone "Mars/Base"`)},
		{name: "timezone Local", in: `{"timezone": "Local"}`,
			want: fe("timezone", `must be an IANA time zone name like "Europe/Paris", got "Local"`)},
		{name: "bad timezone hides the schedule", in: `{"timezone": "Mars/Base", "schedule": "FREQ=DAILY"}`,
			want: fe("timezone", `unknown time zone "Mars/Base"`)},

		// timeout
		{name: "timeout 1ns", in: `{"timeout": "1ns"}`, want: fe("timeout", "must be >= 1s, got 1ns")},
		{name: "timeout 1ns in ISO 8601", in: `{"timeout": "PT0.000000001S"}`, want: fe("timeout", "must be >= 1s, got 1ns")},
		{name: "timeout just below the minimum", in: `{"timeout": "999ms"}`, want: fe("timeout", "must be >= 1s, got 999ms")},
		{name: "timeout at the minimum", in: `{"timeout": "1s"}`},
		{name: "timeout configured minimum", in: `{"timeout": "1m"}`, lim: refresh.Limits{MinTimeout: 5 * time.Minute},
			want: fe("timeout", "must be >= 5m, got 1m")},
		{name: "timeout 0", in: `{"timeout": "0s"}`, want: fe("timeout", "must be >= 1s, got 0s")},
		{name: "timeout negative", in: `{"timeout": "-1m"}`, want: fe("timeout", "must be >= 1s, got -1m")},
		{name: "timeout most negative", in: `{"timeout": "-2562047h47m16.854775808s"}`,
			want: fe("timeout", "must be >= 1s, got -2562047h47m16.854775808s")},
		{name: "timeout overflowing", in: `{"timeout": "P300000D"}`,
			want: fe("timeout", `must be at most 2562047h47m16.854775807s, got "P300000D"`)},
		{name: "timeout overflowing negative", in: `{"timeout": "-P300000D"}`,
			want: fe("timeout", `must be at least -2562047h47m16.854775807s, got "-P300000D"`)},
		{name: "timeout at the limit", in: `{"timeout": "P7D"}`},
		{name: "timeout over the limit", in: `{"timeout": "168h0m1s"}`, want: fe("timeout", "must be <= 168h, got 168h1s")},
		{name: "timeout configured limit", in: `{"timeout": "3h"}`, lim: small, want: fe("timeout", "must be <= 2h, got 3h")},
		{name: "default timeout fits the limit", in: `{}`, lim: refresh.Limits{MaxTimeout: 30 * time.Minute}},

		// delays
		{name: "both delays and backoff", in: `{"retry": {"delays": ["1m"], "backoff": {"strategy": "immediate"}}}`,
			want: fe("retry", "set either delays or backoff, not both")},
		{name: "empty delays and backoff", in: `{"retry": {"delays": [], "backoff": {"strategy": "immediate"}}}`,
			want: fe("retry", "set either delays or backoff, not both")},
		{name: "delay 0", in: `{"retry": {"delays": ["0s"]}}`},
		{name: "delay negative", in: `{"retry": {"delays": ["1m", "2m", "-1m"]}}`, want: fe("retry.delays[2]", "must be >= 0, got -1m")},
		{name: "delay at the limit", in: `{"retry": {"delays": ["1h"]}}`, lim: small},
		{name: "delay over the limit", in: `{"retry": {"delays": ["1h0m1s"]}}`, lim: small,
			want: fe("retry.delays[0]", "must be <= 1h, got 1h1s")},
		{name: "delays at the retry limit", in: `{"retry": {"delays": ["1m", "1m", "1m"]}}`, lim: small},
		{name: "delays over the retry limit", in: `{"retry": {"delays": ["1m", "1m", "1m", "1m"]}}`, lim: small,
			want: fe("retry.delays", "must have at most 3 entries, got 4")},
		{name: "delays over the default retry limit", in: `{"retry": {"delays": [` + strings.Repeat(`"1m",`, 100) + `"1m"]}}`,
			want: fe("retry.delays", "must have at most 100 entries, got 101")},

		// backoff
		{name: "strategy unknown", in: backoff(`"strategy": "random", "base": "1m"`),
			want: fe("retry.backoff.strategy", `must be one of immediate, fixed, linear, exponential, fibonacci, got "random"`)},
		{name: "strategy missing", in: backoff(`"base": "1m"`),
			want: fe("retry.backoff.strategy", `must be one of immediate, fixed, linear, exponential, fibonacci, got ""`)},
		{name: "immediate", in: backoff(`"strategy": "immediate"`)},
		{name: "immediate with base", in: backoff(`"strategy": "immediate", "base": "1m"`),
			want: fe("retry.backoff.base", "is not used by the immediate strategy")},
		{name: "fixed", in: backoff(`"strategy": "fixed", "base": "1ns"`)},
		{name: "base at the delay limit", in: backoff(`"strategy": "linear", "base": "1h"`), lim: small},
		{name: "base over the delay limit", in: backoff(`"strategy": "linear", "base": "1h0m1s"`), lim: small,
			want: fe("retry.backoff.base", "must be <= 1h, got 1h1s")},
		{name: "fixed without base", in: backoff(`"strategy": "fixed"`), want: fe("retry.backoff.base", "must be > 0, got 0s")},
		{name: "linear base 0", in: backoff(`"strategy": "linear", "base": "0s"`), want: fe("retry.backoff.base", "must be > 0, got 0s")},
		{name: "fibonacci base negative", in: backoff(`"strategy": "fibonacci", "base": "-1s"`),
			want: fe("retry.backoff.base", "must be > 0, got -1s")},
		{name: "exponential base missing", in: backoff(`"strategy": "exponential"`), want: fe("retry.backoff.base", "must be > 0, got 0s")},
		{name: "multiplier 1", in: backoff(`"strategy": "exponential", "base": "1m", "multiplier": 1`)},
		{name: "multiplier 0.99", in: backoff(`"strategy": "exponential", "base": "1m", "multiplier": 0.99`),
			want: fe("retry.backoff.multiplier", "must be >= 1, got 0.99")},
		{name: "multiplier 0.5", in: backoff(`"strategy": "exponential", "base": "1m", "multiplier": 0.5`),
			want: fe("retry.backoff.multiplier", "must be >= 1, got 0.5")},
		{name: "multiplier explicit 0", in: backoff(`"strategy": "exponential", "base": "1m", "multiplier": 0`),
			want: fe("retry.backoff.multiplier", "must be >= 1, got 0")},
		{name: "multiplier on linear", in: backoff(`"strategy": "linear", "base": "1m", "multiplier": 2`),
			want: fe("retry.backoff.multiplier", "is only used by the exponential strategy")},
		{name: "max_delay 0", in: backoff(`"strategy": "fixed", "base": "1m", "max_delay": "0s"`)},
		{name: "max_delay negative", in: backoff(`"strategy": "fixed", "base": "1m", "max_delay": "-1s"`),
			want: fe("retry.backoff.max_delay", "must be >= 0, got -1s")},
		{name: "max_delay at the limit", in: backoff(`"strategy": "fixed", "base": "1m", "max_delay": "P30D"`)},
		{name: "max_delay over the limit", in: backoff(`"strategy": "fixed", "base": "1m", "max_delay": "P31D"`),
			want: fe("retry.backoff.max_delay", "must be <= 720h, got 744h")},
		{name: "max_retries 0", in: backoff(`"strategy": "fixed", "base": "1m", "max_retries": 0`)},
		{name: "max_retries at the limit", in: backoff(`"strategy": "fixed", "base": "1m", "max_retries": 100`)},
		{name: "max_retries over the limit", in: backoff(`"strategy": "fixed", "base": "1m", "max_retries": 101`),
			want: fe("retry.backoff.max_retries", "must be between 0 and 100, got 101")},
		{name: "max_retries configured limit", in: backoff(`"strategy": "fixed", "base": "1m", "max_retries": 4`), lim: small,
			want: fe("retry.backoff.max_retries", "must be between 0 and 3, got 4")},
		{name: "max_retries negative", in: backoff(`"strategy": "fixed", "base": "1m", "max_retries": -1`),
			want: fe("retry.backoff.max_retries", "must be between 0 and 100, got -1")},
		{name: "defaults fit the limits", in: backoff(`"strategy": "fixed", "base": "1m"`), lim: small},

		// jitter
		{name: "jitter 0", in: `{"retry": {"jitter": 0}}`},
		{name: "jitter 0.999", in: `{"retry": {"jitter": 0.999}}`},
		{name: "jitter 1", in: `{"retry": {"jitter": 1}}`, want: fe("retry.jitter", "must be >= 0 and < 1, got 1")},
		{name: "jitter negative", in: `{"retry": {"jitter": -0.1}}`, want: fe("retry.jitter", "must be >= 0 and < 1, got -0.1")},

		// kinds
		{name: "retry_on empty entry", in: `{"retry": {"retry_on": ["http_503", ""]}}`, want: fe("retry.retry_on[1]", "must not be empty")},
		{name: "non_retryable blank entry", in: `{"retry": {"non_retryable": [" "]}}`, want: fe("retry.non_retryable[0]", "must not be empty")},
		{name: "retry_on at the length limit", in: `{"retry": {"retry_on": ` + kinds(100) + `}}`},
		{name: "retry_on over the length limit", in: `{"retry": {"retry_on": ` + kinds(101) + `}}`,
			want: fe("retry.retry_on", "must have at most 100 entries, got 101")},
		{name: "non_retryable over the length limit", in: `{"retry": {"non_retryable": ` + kinds(101) + `}}`,
			want: fe("retry.non_retryable", "must have at most 100 entries, got 101")},
		{name: "retry_on configured length limit", in: `{"retry": {"retry_on": ` + kinds(3) + `}}`, lim: refresh.Limits{MaxKinds: 2},
			want: fe("retry.retry_on", "must have at most 2 entries, got 3")},
		{name: "a list over the limit is refused whole", in: `{"retry": {"retry_on": [` + strings.Repeat(`"", 1, `, 100) + `""]}}`,
			want: fe("retry.retry_on", "must have at most 100 entries, got 201")},
		{name: "kind at the length limit", in: `{"retry": {"retry_on": ["` + strings.Repeat("k", 64) + `"]}}`},
		{name: "kind over the length limit", in: `{"retry": {"non_retryable": ["ok", "` + strings.Repeat("k", 65) + `"]}}`,
			want: fe("retry.non_retryable[1]", "must be at most 64 bytes, got 65")},
		{name: "kind configured length limit", in: `{"retry": {"retry_on": ["http_503"]}}`, lim: refresh.Limits{MaxKindBytes: 7},
			want: fe("retry.retry_on[0]", "must be at most 7 bytes, got 8")},

		// on_exhausted and give_up_after
		{name: "on_exhausted unknown", in: `{"on_exhausted": "retry_forever"}`,
			want: fe("on_exhausted", `must be "disable" or "wait_next", got "retry_forever"`)},
		{name: "wait_next without a schedule", in: `{"on_exhausted": "wait_next"}`, want: fe("on_exhausted", "wait_next needs a schedule")},
		{name: "give_up_after 0", in: `{"give_up_after": "0s"}`},
		{name: "give_up_after negative", in: `{"give_up_after": "-PT1H"}`, want: fe("give_up_after", "must be >= 0, got -1h")},
		{name: "give_up_after at the limit", in: `{"give_up_after": "P365D"}`},
		{name: "give_up_after over the limit", in: `{"give_up_after": "P365DT1S"}`, want: fe("give_up_after", "must be <= 8760h, got 8760h1s")},
		{name: "give_up_after configured limit", in: `{"give_up_after": "P8D"}`, lim: refresh.Limits{MaxGiveUpAfter: 7 * 24 * time.Hour},
			want: fe("give_up_after", "must be <= 168h, got 192h")},

		// disabled_message
		{name: "all placeholders", in: `{"disabled_message": "{attempts} since {since}: {error}"}`},
		{name: "no placeholder", in: `{"disabled_message": "Refresh stopped, contact support."}`},
		{name: "unknown placeholder", in: `{"disabled_message": "{attempts} {errors} {errors} {}"}`,
			want: []refresh.FieldError{
				{Field: "disabled_message", Rule: `unknown placeholder "{errors}"; use {attempts}, {error}, {since}`},
				{Field: "disabled_message", Rule: `unknown placeholder "{}"; use {attempts}, {error}, {since}`},
			}},
		{name: "lone brace", in: `{"disabled_message": "got { and }"}`,
			want: fe("disabled_message", `unknown placeholder "{ and }"; use {attempts}, {error}, {since}`)},
		{name: "unmatched brace", in: `{"disabled_message": "smile :-{"}`},
		{name: "message at the length limit", in: `{"disabled_message": "` + strings.Repeat("x", 1000) + `"}`},
		{name: "message over the length limit", in: `{"disabled_message": "` + strings.Repeat("x", 1001) + `"}`,
			want: fe("disabled_message", "must be at most 1000 bytes, got 1001")},
		{name: "the amplifying message", in: `{"disabled_message": "` + strings.Repeat("{error}", 110000) + `"}`,
			want: fe("disabled_message", "must be at most 1000 bytes, got 770000")},
		{name: "message configured length limit", in: `{"disabled_message": "{error}!"}`, lim: refresh.Limits{MaxMessageBytes: 7},
			want: fe("disabled_message", "must be at most 7 bytes, got 8")},
		{name: "each placeholder once", in: `{"disabled_message": "{attempts} {error} {since}"}`},
		{name: "error twice", in: `{"disabled_message": "{error} / {error}"}`,
			want: fe("disabled_message", "must contain {error} at most once, got 2")},
		{name: "every placeholder repeated", in: `{"disabled_message": "{since}{attempts}{error}{attempts}{since}{error}{error}"}`,
			want: []refresh.FieldError{
				{Field: "disabled_message", Rule: "must contain {attempts} at most once, got 2"},
				{Field: "disabled_message", Rule: "must contain {error} at most once, got 3"},
				{Field: "disabled_message", Rule: "must contain {since} at most once, got 2"},
			}},
		{name: "expansion at the reason limit", in: `{"disabled_message": "` + strings.Repeat("x", 55) + `{attempts}{since}{error}"}`,
			lim: refresh.Limits{MaxReasonBytes: 100}},
		{name: "expansion over the reason limit", in: `{"disabled_message": "` + strings.Repeat("x", 56) + `{attempts}{since}{error}"}`,
			lim:  refresh.Limits{MaxReasonBytes: 100},
			want: fe("disabled_message", "must expand to at most 100 bytes (the limit of a disabled reason), got up to 101 before the error text")},

		// decoding
		{name: "unknown top-level field", in: `{"schedul": "FREQ=DAILY"}`, want: fe("schedul", "unknown field")},
		{name: "unknown retry field", in: `{"retry": {"dealys": ["1m"]}}`, want: fe("retry.dealys", "unknown field")},
		{name: "unknown backoff field", in: backoff(`"strategy": "immediate", "factor": 2`),
			want: fe("retry.backoff.factor", "unknown field")},
		{name: "field names are case-sensitive", in: `{"Timeout": "1h"}`, want: fe("Timeout", "unknown field")},
		{name: "duplicate field", in: `{"timeout": "1h", "timeout": "2h"}`, want: fe("timeout", "duplicate field")},
		{name: "duplicate field spelled with an escape", in: `{"timeout": "1h", "time\u006fut": "2h"}`, want: fe("timeout", "duplicate field")},
		{name: "duplicate retry field", in: `{"retry": {"jitter": 0.1, "jitter": 0.2}}`, want: fe("retry.jitter", "duplicate field")},
		{name: "duplicate backoff field", in: backoff(`"strategy": "immediate", "strategy": "fixed"`),
			want: fe("retry.backoff.strategy", "duplicate field")},
		{name: "duplicate object", in: `{"retry": {"delays": []}, "retry": {"delays": ["1m"]}}`, want: fe("retry", "duplicate field")},
		{name: "long unknown names are shortened", in: `{"` + strings.Repeat("a", 100) + `": 1}`,
			want: fe(strings.Repeat("a", 61)+"...", "unknown field")},
		{name: "bad duration", in: `{"timeout": "xyz"}`, want: fe("timeout", `must be a duration like "90s" or "PT5M", got "xyz"`)},
		{name: "bad duration in delays", in: `{"retry": {"delays": ["1m", "xyz"]}}`,
			want: fe("retry.delays[1]", `must be a duration like "90s" or "PT5M", got "xyz"`)},
		{name: "years refused", in: `{"give_up_after": "P1Y"}`,
			want: fe("give_up_after", `must not use years or months, whose length varies (use days, e.g. "P30D"), got "P1Y"`)},
		{name: "duration as number", in: `{"timeout": 3600}`, want: fe("timeout", `must be a duration like "90s" or "PT5M", got 3600`)},
		{name: "string as number", in: `{"schedule": 5}`, want: fe("schedule", "must be a string, got 5")},
		{name: "number as string", in: `{"retry": {"jitter": "0.1"}}`, want: fe("retry.jitter", `must be a number, got "0.1"`)},
		{name: "integer as fraction", in: backoff(`"strategy": "immediate", "max_retries": 2.5`),
			want: fe("retry.backoff.max_retries", "must be an integer, got 2.5")},
		{name: "bool as string", in: `{"retry": {"align": "yes"}}`, want: fe("retry.align", `must be true or false, got "yes"`)},
		{name: "array as object", in: `{"retry": {"retry_on": "http_503"}}`, want: fe("retry.retry_on", `must be an array, got "http_503"`)},
		{name: "array element type", in: `{"retry": {"non_retryable": ["x", 1]}}`, want: fe("retry.non_retryable[1]", "must be a string, got 1")},
		{name: "object as array", in: `{"retry": []}`, want: fe("retry", "must be an object, got []")},
		{name: "backoff not an object", in: `{"retry": {"backoff": "exponential"}}`,
			want: fe("retry.backoff", `must be an object, got "exponential"`)},
		{name: "long values are shortened", in: `{"retry": {"jitter": "` + strings.Repeat("a", 60) + `"}}`,
			want: fe("retry.jitter", `must be a number, got "`+strings.Repeat("a", 36)+`...`)},
		{name: "not an object", in: `[1]`, want: fe("", "must be an object, got [1]")},
		{name: "invalid JSON", in: `{"timeout": `, want: fe("", "invalid JSON: unexpected end of JSON input (at byte 12)")},
		{name: "trailing data", in: `{} {}`, want: fe("", "invalid JSON: invalid character '{' after top-level value (at byte 4)")},
		{name: "a bad schedule does not make wait_next complain", in: `{"schedule": 1, "on_exhausted": "wait_next"}`,
			want: fe("schedule", "must be a string, got 1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, fieldErrors(t, tt.in, tt.lim))
		})
	}
}

func TestParsePolicyBadSchedule(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"FREQ=SOMETIMES", "hello", "DTSTART:2026\nRRULE:FREQ=DAILY"} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			in, err := json.Marshal(map[string]string{"schedule": s})
			require.NoError(t, err)
			got := fieldErrors(t, string(in), refresh.Limits{})
			require.Len(t, got, 1)
			require.Equal(t, "schedule", got[0].Field)
			require.NotEmpty(t, got[0].Rule) // rrule's own message
		})
	}
}

func TestParsePolicyReportsEveryError(t *testing.T) {
	t.Parallel()
	in := `{
		"timezone": "Mars/Base",
		"timeout": "0s",
		"retry": {
			"dealys": [],
			"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5, "max_retries": 101, "extra": true},
			"jitter": 1,
			"retry_on": [""]
		},
		"on_exhausted": "wait_next",
		"give_up_after": "xyz",
		"disabled_message": "{oops}"
	}`
	err := func() error { _, err := refresh.ParsePolicy([]byte(in), refresh.DefaultLimits()); return err }()
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
	require.Equal(t, []refresh.FieldError{
		// Decoding, in document order.
		{Field: "retry.dealys", Rule: "unknown field"},
		{Field: "retry.backoff.extra", Rule: "unknown field"},
		{Field: "give_up_after", Rule: `must be a duration like "90s" or "PT5M", got "xyz"`},
		// Then the rules, in field order.
		{Field: "timezone", Rule: `unknown time zone "Mars/Base"`},
		{Field: "timeout", Rule: "must be >= 1s, got 0s"},
		{Field: "retry.backoff.multiplier", Rule: "must be >= 1, got 0.5"},
		{Field: "retry.backoff.max_retries", Rule: "must be between 0 and 100, got 101"},
		{Field: "retry.jitter", Rule: "must be >= 0 and < 1, got 1"},
		{Field: "retry.retry_on[0]", Rule: "must not be empty"},
		{Field: "on_exhausted", Rule: "wait_next needs a schedule"},
		{Field: "disabled_message", Rule: `unknown placeholder "{oops}"; use {attempts}, {error}, {since}`},
	}, err.(*refresh.ValidationError).Fields)
	require.Contains(t, err.Error(), "retry.backoff.multiplier: must be >= 1, got 0.5; ")
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    refresh.Policy
		want []refresh.FieldError
	}{
		{name: "default", p: refresh.DefaultPolicy()},
		{name: "zero", p: refresh.Policy{}, want: []refresh.FieldError{
			{Field: "timeout", Rule: "must be >= 1s, got 0s"},
			{Field: "retry", Rule: "set delays or backoff"},
			{Field: "on_exhausted", Rule: `must be "disable" or "wait_next", got ""`},
		}},
		{name: "NaN jitter", p: func() refresh.Policy {
			p := refresh.DefaultPolicy()
			p.Retry.Jitter = math.NaN()
			return p
		}(), want: []refresh.FieldError{{Field: "retry.jitter", Rule: "must be >= 0 and < 1, got NaN"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Validate(refresh.DefaultLimits())
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			var v *refresh.ValidationError
			require.True(t, errors.As(err, &v))
			require.Equal(t, tt.want, v.Fields)
		})
	}
}

func TestPolicyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		out  string // the JSON of the parsed policy, when checked
	}{
		{name: "defaults", in: `{}`,
			out: `{"timeout":"1h","retry":{"delays":["0s","1m","5m","15m","30m","1h"],"jitter":0,` +
				`"non_retryable":["validation","not_found","unauthorized","forbidden"]},"on_exhausted":"disable",` +
				`"disabled_message":"Refresh disabled after {attempts} failed attempt(s)."}`},
		{name: "empty lists", in: `{"retry": {"delays": [], "retry_on": [], "non_retryable": []}}`,
			out: `{"timeout":"1h","retry":{"delays":[],"jitter":0,"non_retryable":[]},"on_exhausted":"disable",` +
				`"disabled_message":"Refresh disabled after {attempts} failed attempt(s)."}`},
		{name: "exponential", in: `{"retry": {"backoff": {"strategy": "exponential", "base": "PT1M"}}}`,
			out: `{"timeout":"1h","retry":{"backoff":{"strategy":"exponential","base":"1m","multiplier":2,` +
				`"max_delay":"720h","max_retries":5},"jitter":0,"non_retryable":["validation","not_found","unauthorized","forbidden"]},` +
				`"on_exhausted":"disable","disabled_message":"Refresh disabled after {attempts} failed attempt(s)."}`},
		{name: "immediate with max_delay 0", in: `{"retry": {"backoff": {"strategy": "immediate", "max_delay": "0s", "max_retries": 0}}}`},
		{name: "fibonacci", in: `{"retry": {"backoff": {"strategy": "fibonacci", "base": "90s", "max_delay": "P1D", "max_retries": 20}, "jitter": 0.25}}`},
		{name: "everything", in: `{
			"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
			"timezone": "Europe/Paris", "timeout": "PT1H30M",
			"retry": {"delays": ["0s", "1m30s", "P1D"], "jitter": 0.1, "align": false,
				"retry_on": ["http_503"], "non_retryable": ["validation"]},
			"on_exhausted": "wait_next", "give_up_after": "P7D", "disabled_message": "{attempts} since {since}: {error}"}`},
		{name: "align true", in: `{"schedule": "FREQ=HOURLY", "retry": {"align": true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := refresh.ParsePolicy([]byte(tt.in), refresh.DefaultLimits())
			require.NoError(t, err)
			out, err := json.Marshal(p)
			require.NoError(t, err)
			if tt.out != "" {
				require.JSONEq(t, tt.out, string(out))
			}
			back, err := refresh.ParsePolicy(out, refresh.DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, p, back)

			// Plain encoding/json reads the same policy back, as a store does.
			var plain refresh.Policy
			require.NoError(t, json.Unmarshal(out, &plain))
			require.Equal(t, p, plain)
		})
	}
}

func TestPolicyMaxRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    refresh.Retry
		want int
	}{
		{name: "delays", r: refresh.Retry{Delays: []refresh.Duration{0, 1, 2}}, want: 3},
		{name: "no delays", r: refresh.Retry{Delays: []refresh.Duration{}}, want: 0},
		{name: "backoff", r: refresh.Retry{Backoff: &refresh.Backoff{Strategy: "immediate", MaxRetries: 7}}, want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refresh.Policy{Retry: tt.r}.MaxRetries())
		})
	}
}

func TestPolicyDelay(t *testing.T) {
	t.Parallel()
	const m = time.Minute
	bo := func(strategy string, base time.Duration, mult float64, maxDelay time.Duration) refresh.Policy {
		return refresh.Policy{Retry: refresh.Retry{Backoff: &refresh.Backoff{
			Strategy: strategy, Base: dur(base), Multiplier: mult, MaxDelay: dur(maxDelay), MaxRetries: 100}}}
	}
	tests := []struct {
		name string
		p    refresh.Policy
		want []time.Duration // for n = 1, 2, ...
	}{
		{name: "delays", p: refresh.DefaultPolicy(), want: []time.Duration{0, m, 5 * m, 15 * m, 30 * m, 60 * m}},
		{name: "delays beyond the list wait the last", p: refresh.Policy{Retry: refresh.Retry{Delays: []refresh.Duration{dur(m), dur(2 * m)}}},
			want: []time.Duration{m, 2 * m, 2 * m, 2 * m}},
		{name: "no delays", p: refresh.Policy{Retry: refresh.Retry{Delays: []refresh.Duration{}}}, want: []time.Duration{0, 0}},
		{name: "immediate", p: bo("immediate", 0, 0, time.Hour), want: []time.Duration{0, 0, 0, 0, 0, 0}},
		{name: "fixed", p: bo("fixed", 3*m, 0, time.Hour), want: []time.Duration{3 * m, 3 * m, 3 * m, 3 * m, 3 * m, 3 * m}},
		{name: "linear", p: bo("linear", m, 0, time.Hour), want: []time.Duration{m, 2 * m, 3 * m, 4 * m, 5 * m, 6 * m}},
		{name: "exponential", p: bo("exponential", m, 2, time.Hour), want: []time.Duration{m, 2 * m, 4 * m, 8 * m, 16 * m, 32 * m}},
		{name: "exponential 1.5", p: bo("exponential", 4*time.Second, 1.5, time.Hour),
			want: []time.Duration{4 * time.Second, 6 * time.Second, 9 * time.Second, 13500 * time.Millisecond,
				20250 * time.Millisecond, 30375 * time.Millisecond}},
		{name: "exponential 1", p: bo("exponential", m, 1, time.Hour), want: []time.Duration{m, m, m, m, m, m}},
		{name: "fibonacci", p: bo("fibonacci", m, 0, time.Hour), want: []time.Duration{m, m, 2 * m, 3 * m, 5 * m, 8 * m, 13 * m}},
		{name: "linear capped", p: bo("linear", 10*m, 0, 35*m), want: []time.Duration{10 * m, 20 * m, 30 * m, 35 * m, 35 * m, 35 * m}},
		{name: "exponential capped", p: bo("exponential", m, 2, 10*m), want: []time.Duration{m, 2 * m, 4 * m, 8 * m, 10 * m, 10 * m}},
		{name: "fibonacci capped", p: bo("fibonacci", m, 0, 4*m), want: []time.Duration{m, m, 2 * m, 3 * m, 4 * m, 4 * m}},
		{name: "fixed capped", p: bo("fixed", 2*time.Hour, 0, time.Hour), want: []time.Duration{time.Hour, time.Hour}},
		{name: "cap 0", p: bo("fixed", m, 0, 0), want: []time.Duration{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i, want := range tt.want {
				require.Equal(t, want, tt.p.Delay(i+1, "m", 1, time.Time{}), "n = %d", i+1)
			}
		})
	}
}

func TestPolicyDelayHugeN(t *testing.T) {
	t.Parallel()
	const maxDelay = 30 * 24 * time.Hour
	for _, strategy := range []string{"fixed", "linear", "exponential", "fibonacci"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			b := &refresh.Backoff{Strategy: strategy, Base: dur(time.Hour), MaxDelay: dur(maxDelay), MaxRetries: 100}
			if strategy == "exponential" {
				b.Multiplier = 10
			}
			p := refresh.Policy{Retry: refresh.Retry{Backoff: b}}
			for _, n := range []int{1000, 1 << 20, math.MaxInt32, math.MaxInt64} {
				d := p.Delay(n, "m", 1, time.Time{})
				if strategy == "fixed" {
					require.Equal(t, time.Hour, d, "n = %d", n)
				} else {
					require.Equal(t, maxDelay, d, "n = %d", n)
				}
			}
		})
	}

	t.Run("n below 1 counts as 1", func(t *testing.T) {
		t.Parallel()
		p := refresh.Policy{Retry: refresh.Retry{Backoff: &refresh.Backoff{Strategy: "linear", Base: dur(time.Minute), MaxDelay: dur(time.Hour)}}}
		require.Equal(t, time.Minute, p.Delay(0, "m", 1, time.Time{}))
		require.Equal(t, time.Minute, p.Delay(math.MinInt64, "m", 1, time.Time{}))
	})

	t.Run("huge cap and jitter saturate", func(t *testing.T) {
		t.Parallel()
		p := refresh.Policy{Retry: refresh.Retry{Jitter: 0.99, Backoff: &refresh.Backoff{
			Strategy: "exponential", Base: dur(time.Hour), Multiplier: 2, MaxDelay: dur(math.MaxInt64)}}}
		for i := range 50 {
			require.Positive(t, p.Delay(math.MaxInt64, fmt.Sprint("m", i), 1, time.Time{}))
		}
	})
}

func TestPolicyDelayJitter(t *testing.T) {
	t.Parallel()
	const base = 10 * time.Minute
	since := time.Date(2026, 3, 2, 6, 2, 0, 0, time.UTC)
	jittered := func(j float64) refresh.Policy {
		return refresh.Policy{Retry: refresh.Retry{Jitter: j, Delays: []refresh.Duration{dur(base)}}}
	}

	t.Run("zero jitter is exact", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, base, jittered(0).Delay(1, "m", 3, since))
	})

	t.Run("zero delay stays zero", func(t *testing.T) {
		t.Parallel()
		p := refresh.Policy{Retry: refresh.Retry{Jitter: 0.5, Delays: []refresh.Duration{0}}}
		require.Zero(t, p.Delay(1, "m", 3, since))
	})

	t.Run("deterministic", func(t *testing.T) {
		t.Parallel()
		p := jittered(0.5)
		a := p.Delay(1, "bigtable-1", 3, since)
		require.Equal(t, a, p.Delay(1, "bigtable-1", 3, since))
		// The zone of failing_since does not matter, only the instant.
		require.Equal(t, a, p.Delay(1, "bigtable-1", 3, since.In(time.FixedZone("X", 3600))))
		require.NotEqual(t, a, p.Delay(1, "bigtable-2", 3, since))
		require.NotEqual(t, a, p.Delay(1, "bigtable-1", 4, since))
		require.NotEqual(t, a, p.Delay(1, "bigtable-1", 3, since.Add(time.Second)))
	})

	for _, j := range []float64{0.1, 0.5, 0.999} {
		t.Run(fmt.Sprintf("bounds and spread %v", j), func(t *testing.T) {
			t.Parallel()
			p := jittered(j)
			lo := time.Duration(float64(base) * (1 - j))
			hi := time.Duration(float64(base) * (1 + j))
			var low, high, sum int
			const samples = 2000
			for i := range samples {
				// Consecutive failures of one model must spread as well as
				// different models.
				d := p.Delay(1, "bigtable-1", i, since)
				require.GreaterOrEqual(t, d, lo)
				require.LessOrEqual(t, d, hi)
				require.Zero(t, d%time.Millisecond, "rounded to the millisecond")
				u := (float64(d)/float64(base) - 1 + j) / (2 * j)
				sum += int(u * 100)
				if u < 0.1 {
					low++
				}
				if u > 0.9 {
					high++
				}
			}
			// A uniform u puts about 10% in each tail and averages 0.5.
			require.InDelta(t, samples/10, low, samples/20)
			require.InDelta(t, samples/10, high, samples/20)
			require.InDelta(t, 50, sum/samples, 3)
		})
	}

	t.Run("applied after the cap", func(t *testing.T) {
		t.Parallel()
		p := refresh.Policy{Retry: refresh.Retry{Jitter: 0.5, Backoff: &refresh.Backoff{
			Strategy: "fixed", Base: dur(time.Hour), MaxDelay: dur(10 * time.Minute)}}}
		above := false
		for i := range 100 {
			d := p.Delay(1, "m", i, since)
			require.InDelta(t, float64(10*time.Minute), float64(d), float64(5*time.Minute))
			above = above || d > 10*time.Minute
		}
		require.True(t, above, "jitter may go past the cap")
	})
}

func TestPolicyAligned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		schedule string
		align    *bool
		want     bool
	}{
		{name: "schedule, align unset", schedule: "FREQ=DAILY", want: true},
		{name: "no schedule, align unset", want: false},
		{name: "schedule, align false", schedule: "FREQ=DAILY", align: ptr(false), want: false},
		{name: "no schedule, align true", align: ptr(true), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := refresh.Policy{Schedule: tt.schedule, Retry: refresh.Retry{Align: tt.align}}
			require.Equal(t, tt.want, p.Aligned())
		})
	}
}

func TestPolicyRetryable(t *testing.T) {
	t.Parallel()
	def := refresh.DefaultPolicy()
	allow := refresh.DefaultPolicy()
	allow.Retry.RetryOn = []string{"http_503", "timeout"}
	tests := []struct {
		name      string
		p         refresh.Policy
		kind      string
		retryable bool
		ok        bool
		why       string
	}{
		{name: "retryable", p: def, kind: "http_503", retryable: true, ok: true},
		{name: "worker says no", p: def, kind: "http_503", retryable: false, why: "the worker marked it non-retryable"},
		{name: "denied kind", p: def, kind: "not_found", retryable: true, why: `kind "not_found" is in retry.non_retryable`},
		{name: "worker says no first", p: def, kind: "not_found", retryable: false, why: "the worker marked it non-retryable"},
		{name: "allowed kind", p: allow, kind: "timeout", retryable: true, ok: true},
		{name: "kind not allowed", p: allow, kind: "http_500", retryable: true, why: `kind "http_500" is not in retry.retry_on`},
		{name: "deny list wins over allow list", p: func() refresh.Policy {
			p := allow
			p.Retry.NonRetryable = []string{"timeout"}
			return p
		}(), kind: "timeout", retryable: true, why: `kind "timeout" is in retry.non_retryable`},
		{name: "empty deny list", p: refresh.Policy{Retry: refresh.Retry{NonRetryable: []string{}}}, kind: "validation", retryable: true, ok: true},
		{name: "kinds are case-sensitive", p: def, kind: "Validation", retryable: true, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, why := tt.p.Retryable(tt.kind, tt.retryable)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.why, why)
		})
	}
}

// withError is a disabled message that names {error}: the failure's
// message goes into the reason.
const withError = "Refresh disabled after {attempts} failed attempt(s): {error}"

func TestPolicyDisabledReason(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 2, 5, 2, 0, 0, time.UTC)
	tests := []struct {
		name     string
		message  string
		timezone string
		errMsg   string
		since    time.Time
		want     string
	}{
		{name: "default: no worker text", message: refresh.DefaultPolicy().DisabledMessage, errMsg: "upstream 503", since: since,
			want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "empty message uses the default", errMsg: "upstream 503", since: since,
			want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "{error} when the policy names it", message: withError, errMsg: "upstream 503", since: since,
			want: "Refresh disabled after 3 failed attempt(s): upstream 503"},
		{name: "since in UTC", message: "{attempts} failures since {since}: {error}", errMsg: "boom", since: since,
			want: "3 failures since 2026-03-02T05:02:00Z: boom"},
		{name: "since in the policy zone", message: "since {since}", timezone: "Europe/Paris", since: since,
			want: "since 2026-03-02T06:02:00+01:00"},
		{name: "repeated placeholders", message: "{error} / {error}", errMsg: "x", since: since, want: "x / x"},
		{name: "placeholders in the error stay as they are", message: "{error} at {since}", errMsg: "bad {since} {attempts}", since: since,
			want: "bad {since} {attempts} at 2026-03-02T05:02:00Z"},
		{name: "zero since", message: "since {since}.", want: "since ."},
		{name: "bad zone falls back to UTC", message: "{since}", timezone: "Mars/Base", since: since, want: "2026-03-02T05:02:00Z"},
		{name: "the error is trimmed", message: "{error}!", errMsg: " \n upstream 503\n", want: "upstream 503!"},

		// An empty error leaves no dangling punctuation.
		{name: "empty error, default message", message: refresh.DefaultPolicy().DisabledMessage,
			want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "empty error after a colon", message: withError, want: "Refresh disabled after 3 failed attempt(s)"},
		{name: "blank error after a colon", message: withError, errMsg: " \t\n", want: "Refresh disabled after 3 failed attempt(s)"},
		{name: "empty error, empty message", want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "empty error before more text", message: "Failed: {error}. Please check the source.",
			want: "Failed. Please check the source."},
		{name: "empty error in a list", message: "Failed {attempts} times, {error}, since {since}", since: since,
			want: "Failed 3 times, since 2026-03-02T05:02:00Z"},
		{name: "empty error in brackets", message: "Refresh stopped ({error}).", want: "Refresh stopped."},
		{name: "empty error in quotes", message: `Refresh stopped: "{error}"`, want: "Refresh stopped"},
		{name: "empty error after a dash", message: "Refresh stopped – {error} – contact support", want: "Refresh stopped – contact support"},
		{name: "empty error first", message: "{error}: please check the source", want: "please check the source"},
		{name: "empty error alone: the default message", message: "{error}", want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "empty error between brackets alone: the default message", message: " ({error}) ",
			want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "empty error, no placeholder", message: "Refresh stopped: contact support.", want: "Refresh stopped: contact support."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := refresh.Policy{DisabledMessage: tt.message, Timezone: tt.timezone}
			require.Equal(t, tt.want, p.DisabledReason(3, tt.errMsg, tt.since))
		})
	}
}

// TestPolicyDisabledReasonBounds checks that a disabled reason never
// exceeds Limits.MaxReasonBytes, cutting the error first.
func TestPolicyDisabledReasonBounds(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 2, 5, 2, 0, 0, time.UTC)
	const limit = 100
	prefix := "Refresh disabled after 3 failed attempt(s): " // withError before {error}
	room := limit - len(prefix)
	tests := []struct {
		name    string
		message string
		errMsg  string
		want    string
	}{
		{name: "error that fits exactly", message: withError, errMsg: strings.Repeat("e", room),
			want: prefix + strings.Repeat("e", room)},
		{name: "error one byte over", message: withError, errMsg: strings.Repeat("e", room+1),
			want: prefix + strings.Repeat("e", room-len("…")) + "…"},
		{name: "error of 10 KB", message: withError, errMsg: strings.Repeat("e", 10<<10),
			want: prefix + strings.Repeat("e", room-len("…")) + "…"},
		{name: "error cut at a character boundary", message: withError, errMsg: strings.Repeat("é", room),
			want: prefix + strings.Repeat("é", (room-len("…"))/2) + "…"},
		{name: "error cut before spaces", message: withError, errMsg: strings.Repeat("e", room-len("…")-3) + "       tail",
			want: prefix + strings.Repeat("e", room-len("…")-3) + "…"},
		{name: "the template's words after the error stay", message: "Stopped: {error}. Contact support.", errMsg: strings.Repeat("e", 500),
			want: "Stopped: " + strings.Repeat("e", limit-len("Stopped: . Contact support.")-len("…")) + "…. Contact support."},
		{name: "several errors share the room", message: "{error}|{error}", errMsg: strings.Repeat("e", 500),
			want: strings.Repeat("e", (limit-1)/2-len("…")) + "…|" + strings.Repeat("e", (limit-1)/2-len("…")) + "…"},
		{name: "a template too long by itself is cut", message: strings.Repeat("t", 300) + "{error}", errMsg: "boom",
			want: strings.Repeat("t", limit-len("…")) + "…"},
		// Not a template that validation lets through: read up to its
		// 17th {error} (the longest valid template is limit+24 bytes),
		// each given an equal share of the room, and marked as cut.
		{name: "the amplifying template", message: strings.Repeat("{error}", 110000), errMsg: strings.Repeat("e", 10<<10),
			want: strings.Repeat("ee…", (limit+24)/7) + "…"},
		{name: "the amplifying template with an empty error", message: strings.Repeat("{error}", 110000),
			want: "Refresh disabled after 3 failed attempt(s)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := refresh.DefaultPolicy().WithLimits(refresh.Limits{MaxReasonBytes: limit})
			if tt.message != "" {
				p.DisabledMessage = tt.message
			}
			got := p.DisabledReason(3, tt.errMsg, since)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, len(got), limit)
			require.True(t, utf8.ValidString(got))
		})
	}

	t.Run("every limit from 0 to 120", func(t *testing.T) {
		t.Parallel()
		for limit := range 121 {
			p := refresh.DefaultPolicy().WithLimits(refresh.Limits{MaxReasonBytes: max(limit, 1)})
			for _, e := range []string{"", "boom", strings.Repeat("é", 100)} {
				got := p.DisabledReason(12345, e, since)
				require.LessOrEqual(t, len(got), max(limit, 1), "limit %d, error %q", limit, e)
				require.True(t, utf8.ValidString(got), "limit %d, error %q: %q", limit, e, got)
			}
		}
	})
}

// TestPolicyDisabledReasonCost checks that the amplifying template, which
// once expanded to 1.1 GB, costs memory in proportion to the bound of a
// reason (not run in parallel, so that nothing else allocates meanwhile).
func TestPolicyDisabledReasonCost(t *testing.T) {
	p := refresh.DefaultPolicy()
	p.DisabledMessage = strings.Repeat("{error}", 110000)
	errMsg := strings.Repeat("e", 10<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := p.DisabledReason(3, errMsg, time.Date(2026, 3, 2, 5, 2, 0, 0, time.UTC))
	runtime.ReadMemStats(&after)
	require.LessOrEqual(t, len(got), refresh.DefaultLimits().MaxReasonBytes)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "bytes allocated")
}

func BenchmarkDisabledReason(b *testing.B) {
	since := time.Date(2026, 3, 2, 5, 2, 0, 0, time.UTC)
	inputs := []struct {
		name, message, errMsg string
	}{
		{"default", refresh.DefaultPolicy().DisabledMessage, "upstream 503"},
		{"empty-error", refresh.DefaultPolicy().DisabledMessage, ""},
		{"amplifying", strings.Repeat("{error}", 110000), strings.Repeat("e", 10<<10)},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			p := refresh.DefaultPolicy()
			p.DisabledMessage = in.message
			b.ReportAllocs()
			for b.Loop() {
				p.DisabledReason(3, in.errMsg, since)
			}
		})
	}
}

func ExampleParsePolicy() {
	_, err := refresh.ParsePolicy([]byte(`{
		"timezone": "Mars/Base",
		"retry": {"backoff": {"strategy": "exponential", "base": "PT1M", "multiplier": 0.5}, "dealys": []}
	}`), refresh.DefaultLimits())
	for _, f := range err.(*refresh.ValidationError).Fields {
		fmt.Println(f)
	}

	p, _ := refresh.ParsePolicy([]byte(`{"retry": {"backoff": {"strategy": "fibonacci", "base": "1m", "max_delay": "P1D"}}}`),
		refresh.DefaultLimits())
	for n := 1; n <= p.MaxRetries(); n++ {
		fmt.Print(refresh.Duration(p.Delay(n, "bigtable-1", n, time.Time{})), " ")
	}
	fmt.Println()
	// Output:
	// retry.dealys: unknown field
	// timezone: unknown time zone "Mars/Base"
	// retry.backoff.multiplier: must be >= 1, got 0.5
	// 1m 1m 2m 3m 5m
}

func BenchmarkDelay(b *testing.B) {
	since := time.Date(2026, 3, 2, 6, 2, 0, 0, time.UTC)
	policies := []struct {
		name string
		p    refresh.Policy
	}{
		{name: "delays", p: refresh.DefaultPolicy()},
		{name: "exponential", p: refresh.Policy{Retry: refresh.Retry{Backoff: &refresh.Backoff{
			Strategy: "exponential", Base: dur(time.Minute), Multiplier: 2, MaxDelay: dur(time.Hour)}}}},
		{name: "fibonacci", p: refresh.Policy{Retry: refresh.Retry{Backoff: &refresh.Backoff{
			Strategy: "fibonacci", Base: dur(time.Minute), MaxDelay: dur(24 * time.Hour)}}}},
		{name: "exponential jitter", p: refresh.Policy{Retry: refresh.Retry{Jitter: 0.2, Backoff: &refresh.Backoff{
			Strategy: "exponential", Base: dur(time.Minute), Multiplier: 2, MaxDelay: dur(time.Hour)}}}},
	}
	for _, bb := range policies {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bb.p.Delay(i%6+1, "bigtable-1", i, since)
			}
		})
	}
}

// TestParsePolicyBadBytes checks that no string of a policy may hold what
// a store cannot keep: NUL, invalid UTF-8, or a lone surrogate that JSON
// decoding would silently replace.
func TestParsePolicyBadBytes(t *testing.T) {
	t.Parallel()
	const (
		nul   = `must not contain NUL (\u0000)`
		utf8  = "must be valid UTF-8"
		loneH = `must be valid UTF-8 (lone surrogate \ud800)`
		loneL = `must be valid UTF-8 (lone surrogate \udc00)`
	)
	// in places s, as written in JSON, in each string field.
	fields := []struct {
		field string
		in    func(s string) string
	}{
		{"schedule", func(s string) string { return `{"schedule": "FREQ=DAILY` + s + `"}` }},
		{"timezone", func(s string) string { return `{"timezone": "Europe/Paris` + s + `"}` }},
		{"on_exhausted", func(s string) string { return `{"on_exhausted": "disable` + s + `"}` }},
		{"disabled_message", func(s string) string { return `{"disabled_message": "x` + s + `y"}` }},
		{"retry.retry_on[1]", func(s string) string { return `{"retry": {"retry_on": ["a", "b` + s + `"]}}` }},
		{"retry.non_retryable[0]", func(s string) string { return `{"retry": {"non_retryable": ["` + s + `"]}}` }},
		{"retry.backoff.strategy", func(s string) string {
			return `{"retry": {"backoff": {"strategy": "immediate` + s + `"}}}`
		}},
	}
	bytes := []struct {
		name, s, want string
	}{
		{name: "NUL escape", s: `\u0000`, want: nul},
		{name: "NUL escape with a backslash before", s: `\\\u0000`, want: nul},
		{name: "invalid UTF-8", s: "\xff", want: utf8},
		{name: "truncated UTF-8", s: "\xc3", want: utf8},
		{name: "lone high surrogate", s: `\ud800`, want: loneH},
		{name: "high surrogate before a letter", s: `\ud800\u0041`, want: loneH},
		{name: "lone low surrogate", s: `\udc00`, want: loneL},
		{name: "low before high", s: `\udc00\ud800`, want: loneL},
	}
	for _, f := range fields {
		for _, b := range bytes {
			t.Run(f.field+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				require.Equal(t, []refresh.FieldError{{Field: f.field, Rule: b.want}}, fieldErrors(t, f.in(b.s), refresh.Limits{}))
			})
		}
	}

	t.Run("good text passes", func(t *testing.T) {
		t.Parallel()
		for _, s := range []string{`\u00e9t\u00e9`, "été", `\ud83d\ude00`, "😀", `\\u0000`, `\"\\`, `\n\t`} {
			p, err := refresh.ParsePolicy([]byte(`{"disabled_message": "`+s+`", "retry": {"retry_on": ["k`+s+`"]}}`), refresh.Limits{})
			require.NoError(t, err, s)
			require.NotEmpty(t, p.DisabledMessage)
		}
	})
	t.Run("a duration with NUL is no duration", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []refresh.FieldError{{Field: "timeout", Rule: `must be a duration like "90s" or "PT5M", got "1h\x00"`}},
			fieldErrors(t, `{"timeout": "1h\u0000"}`, refresh.Limits{}))
	})
	t.Run("Validate checks policies built in code", func(t *testing.T) {
		t.Parallel()
		p := refresh.DefaultPolicy()
		p.DisabledMessage = "a\x00b"
		p.Schedule = "FREQ=DAILY\xff"
		p.Retry.NonRetryable = []string{"ok", "k\x00"}
		err := p.Validate(refresh.Limits{})
		require.Equal(t, &refresh.ValidationError{Fields: []refresh.FieldError{
			{Field: "schedule", Rule: utf8},
			{Field: "retry.non_retryable[1]", Rule: nul},
			{Field: "disabled_message", Rule: nul},
		}}, err)
	})
}

// TestPolicyCheckAt checks the rules that depend on the time of the write:
// a schedule must have an occurrence at or after it.
func TestPolicyCheckAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	noFuture := func(at time.Time) []refresh.FieldError {
		return []refresh.FieldError{{Field: "schedule", Rule: "rule has no occurrence after " + at.Format(time.RFC3339)}}
	}
	tests := []struct {
		name     string
		policy   string
		now      time.Time
		created  time.Time // zero: now
		want     []refresh.FieldError
		wantNote string
	}{
		{name: "on demand", policy: `{}`, now: now},
		{name: "an endless rule", policy: `{"schedule": "FREQ=HOURLY"}`, now: now},
		{name: "UNTIL in the past", policy: `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;UNTIL=20260201T000000Z"}`,
			now: now, want: noFuture(now)},
		{name: "COUNT used up", policy: `{"schedule": "DTSTART:20260101T050000Z\nRRULE:FREQ=DAILY;COUNT=3"}`,
			now: now, want: noFuture(now)},
		{name: "last occurrence exactly at now", policy: `{"schedule": "DTSTART:20260228T100000Z\nRRULE:FREQ=DAILY;COUNT=3"}`,
			now: now},
		{name: "one ns after the last occurrence", policy: `{"schedule": "DTSTART:20260228T100000Z\nRRULE:FREQ=DAILY;COUNT=3"}`,
			now: now.Add(time.Nanosecond), want: noFuture(now.Add(time.Nanosecond))},
		{name: "an RDATE in the future", policy: `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=1\nRDATE:20260401T000000Z"}`,
			now: now},
		{name: "a bare rule is anchored at the model's creation", policy: `{"schedule": "FREQ=DAILY;COUNT=2"}`,
			created: now.Add(-24 * time.Hour), now: now.Add(-10 * time.Hour)},
		{name: "a bare rule of an old model may be over", policy: `{"schedule": "FREQ=DAILY;COUNT=2"}`,
			created: now.Add(-48 * time.Hour), now: now, want: noFuture(now)},
		{name: "the same bare rule on a new model", policy: `{"schedule": "FREQ=DAILY;COUNT=2"}`, now: now},
		{name: "zone of the message is UTC", policy: `{"timezone": "Europe/Paris", "schedule": "DTSTART:20260101T000000\nRRULE:FREQ=DAILY;COUNT=1"}`,
			now: now.In(time.FixedZone("X", 3600)), want: noFuture(now)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustPolicy(t, tt.policy)
			created := tt.created
			if created.IsZero() {
				created = tt.now
			}
			err := p.CheckAt(tt.now, created, refresh.DefaultLimits())
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
			require.Equal(t, &refresh.ValidationError{Fields: tt.want}, err)
		})
	}

	t.Run("a schedule that does not parse", func(t *testing.T) {
		t.Parallel()
		p := refresh.DefaultPolicy()
		p.Schedule = "FREQ=SOMETIMES"
		var v *refresh.ValidationError
		require.True(t, errors.As(p.CheckAt(now, now, refresh.Limits{}), &v))
		require.Len(t, v.Fields, 1)
		require.Equal(t, "schedule", v.Fields[0].Field)
	})
}

// TestPolicyMinInterval checks the minimum schedule interval: the smallest
// gap between consecutive occurrences among the first 1,000 at or after the
// write must be at least Limits.MinInterval.
func TestPolicyMinInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		schedule string
		min      time.Duration // zero: the default, 1m
		want     string        // the broken rule, "" if none
	}{
		{name: "every second", schedule: "FREQ=SECONDLY", want: "occurrences must be at least 1m apart, got 1s"},
		{name: "every minute", schedule: "FREQ=MINUTELY"},
		{name: "twice a minute", schedule: "FREQ=MINUTELY;BYSECOND=0,30", want: "occurrences must be at least 1m apart, got 30s"},
		{name: "hourly with two close seconds", schedule: "FREQ=HOURLY;BYMINUTE=0,59;BYSECOND=0,30", want: "occurrences must be at least 1m apart, got 30s"},
		{name: "an RDATE close to an occurrence", schedule: "DTSTART:20260301T000000Z\nRRULE:FREQ=DAILY\nRDATE:20260303T000010Z",
			want: "occurrences must be at least 1m apart, got 10s"},
		{name: "the close pair is past the 1,000th occurrence", schedule: "DTSTART:20260301T000000Z\nRRULE:FREQ=HOURLY\nRDATE:20260701T000010Z"},
		{name: "a lower limit", schedule: "FREQ=SECONDLY;INTERVAL=2", min: time.Second},
		{name: "a higher limit", schedule: "FREQ=HOURLY", min: 2 * time.Hour, want: "occurrences must be at least 2h apart, got 1h"},
		{name: "a single occurrence has no gap", schedule: "DTSTART:20260401T000000Z\nRRULE:FREQ=SECONDLY;COUNT=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim := refresh.DefaultLimits()
			if tt.min != 0 {
				lim.MinInterval = tt.min
			}
			p, err := refresh.ParsePolicy([]byte(`{"schedule": `+strconv.Quote(tt.schedule)+`}`), lim)
			require.NoError(t, err)
			err = p.CheckAt(now, now, lim)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "schedule", Rule: tt.want}}}, err)
		})
	}
}

// TestPolicyScheduleLimits checks that the schedule bounds of Limits reach
// the schedule's parse, at write time and when a stored model is read with
// its policy bound to the limits again.
func TestPolicyScheduleLimits(t *testing.T) {
	t.Parallel()
	const two = `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;BYHOUR=6\nRRULE:FREQ=DAILY;BYHOUR=16"}`
	tight := refresh.DefaultLimits()
	tight.Schedule.MaxRules = 1
	_, err := refresh.ParsePolicy([]byte(two), tight)
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v), "%v", err)
	require.Equal(t, "schedule", v.Fields[0].Field)
	require.Contains(t, v.Fields[0].Rule, "at most 1 rules per schedule, got 2")

	// A loose limit is kept by the policy (and given back by WithLimits to
	// one read from JSON), so the scheduler reads what the write accepted.
	loose := refresh.DefaultLimits()
	loose.Schedule.MaxRules = 200
	var rules strings.Builder
	rules.WriteString("DTSTART:20260101T000000Z")
	for h := range 150 {
		fmt.Fprintf(&rules, "\nRRULE:FREQ=DAILY;BYHOUR=%d;BYMINUTE=%d", h%24, h/24)
	}
	js := `{"schedule": ` + strconv.Quote(rules.String()) + `}`
	_, err = refresh.ParsePolicy([]byte(js), refresh.DefaultLimits())
	require.Error(t, err, "150 rules are over the default limit")
	p, err := refresh.ParsePolicy([]byte(js), loose)
	require.NoError(t, err)
	m := refresh.Model{ID: "m", Policy: p, CreatedAt: modelCreated}
	next, ok := m.Next(morning)
	require.True(t, ok, "the model's schedule is read with its own limits")
	requireTime(t, time.Date(2026, 3, 2, 10, 1, 0, 0, time.UTC), next)

	b, err := json.Marshal(p)
	require.NoError(t, err)
	var back refresh.Policy
	require.NoError(t, json.Unmarshal(b, &back))
	_, ok = refresh.Model{ID: "m", Policy: back, CreatedAt: modelCreated}.Next(morning)
	require.False(t, ok, "read back without its limits, the schedule is over the default")
	_, ok = refresh.Model{ID: "m", Policy: back.WithLimits(loose), CreatedAt: modelCreated}.Next(morning)
	require.True(t, ok)
}

// TestPolicyDelayGlobalMax checks that the global maximum delay bounds the
// final delay, after the jitter, while the policy's max_delay caps it
// before.
func TestPolicyDelayGlobalMax(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 2, 6, 2, 0, 0, time.UTC)
	const samples = 200
	tests := []struct {
		name   string
		policy string
		lim    refresh.Limits
		// max is the bound; some delays must reach it and some stay below.
		max time.Duration
	}{
		{name: "720h delay, default limits", policy: `{"retry": {"delays": ["720h"], "jitter": 0.45}}`, max: 720 * time.Hour},
		{name: "backoff capped at the global limit", policy: `{"retry": {"backoff": {"strategy": "exponential", "base": "1h"}, "jitter": 0.9}}`,
			lim: refresh.Limits{MaxDelay: 4 * time.Hour}, max: 4 * time.Hour},
		{name: "delay one ms below the limit", policy: `{"retry": {"delays": ["59m59.999s"], "jitter": 0.1}}`,
			lim: refresh.Limits{MaxDelay: time.Hour}, max: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := refresh.ParsePolicy([]byte(tt.policy), tt.lim)
			require.NoError(t, err)
			atMax, below := 0, 0
			for i := range samples {
				d := p.Delay(p.MaxRetries(), fmt.Sprint("m", i), 1, since)
				require.LessOrEqual(t, d, tt.max)
				if d == tt.max {
					atMax++
				} else {
					below++
				}
			}
			require.Positive(t, atMax, "the jitter reaches the bound")
			require.Positive(t, below, "the jitter still spreads below the bound")
		})
	}

	t.Run("no jitter reaches the bound exactly", func(t *testing.T) {
		t.Parallel()
		p, err := refresh.ParsePolicy([]byte(`{"retry": {"delays": ["1h"]}}`), refresh.Limits{MaxDelay: time.Hour})
		require.NoError(t, err)
		require.Equal(t, time.Hour, p.Delay(1, "m", 1, since))
	})

	t.Run("the bound is lost in JSON and restored by WithLimits", func(t *testing.T) {
		t.Parallel()
		lim := refresh.Limits{MaxDelay: time.Hour}
		p, err := refresh.ParsePolicy([]byte(`{"retry": {"delays": ["1h"], "jitter": 0.5}}`), lim)
		require.NoError(t, err)
		out, err := json.Marshal(p)
		require.NoError(t, err)
		var stored refresh.Policy
		require.NoError(t, json.Unmarshal(out, &stored))
		require.NotEqual(t, p, stored)
		require.Equal(t, p, stored.WithLimits(lim))
		over := false
		for i := range samples {
			id := fmt.Sprint("m", i)
			over = over || stored.Delay(1, id, 1, since) > time.Hour
			require.LessOrEqual(t, stored.WithLimits(lim).Delay(1, id, 1, since), time.Hour)
		}
		require.True(t, over, "a policy read back without its limits is bound by the default limits")
	})
}
