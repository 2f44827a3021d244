package refresh_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

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
			})},
		{name: "retry without delays or backoff gets the default delays", in: `{"retry": {"jitter": 0.2}}`,
			want: with(func(p *refresh.Policy) { p.Retry.Jitter = 0.2 })},
		{name: "explicit empty delays mean no retries", in: `{"retry": {"delays": []}}`,
			want: with(func(p *refresh.Policy) { p.Retry.Delays = []refresh.Duration{} })},
		{name: "explicit empty non_retryable stays empty", in: `{"retry": {"non_retryable": []}}`,
			want: with(func(p *refresh.Policy) { p.Retry.NonRetryable = []string{} })},
		{name: "empty retry_on is nil", in: `{"retry": {"retry_on": []}}`, want: def},
		{name: "retry_on kept", in: `{"retry": {"retry_on": ["http_503", "timeout"]}}`,
			want: with(func(p *refresh.Policy) { p.Retry.RetryOn = []string{"http_503", "timeout"} })},
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
			})},
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
			})},
		{name: "default delays shrink to tight limits", in: `{}`,
			lim: refresh.Limits{MaxRetries: 4, MaxDelay: 3 * time.Minute},
			want: with(func(p *refresh.Policy) {
				p.Retry.Delays = []refresh.Duration{0, dur(time.Minute), dur(3 * time.Minute), dur(3 * time.Minute)}
			})},
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
		MinTimeout: time.Second, MinInterval: time.Minute, MaxMessageBytes: 1000, MaxReasonBytes: 4096,
		MaxPayloadBytes: 64 << 10, MaxPayloadDepth: 32, MaxFieldErrors: 20},
		refresh.DefaultLimits())
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
		{name: "timeout 1ns", in: `{"timeout": "1ns"}`},
		{name: "timeout 0", in: `{"timeout": "0s"}`, want: fe("timeout", "must be > 0, got 0s")},
		{name: "timeout negative", in: `{"timeout": "-1m"}`, want: fe("timeout", "must be > 0, got -1m")},
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

		// on_exhausted and give_up_after
		{name: "on_exhausted unknown", in: `{"on_exhausted": "retry_forever"}`,
			want: fe("on_exhausted", `must be "disable" or "wait_next", got "retry_forever"`)},
		{name: "wait_next without a schedule", in: `{"on_exhausted": "wait_next"}`, want: fe("on_exhausted", "wait_next needs a schedule")},
		{name: "give_up_after 0", in: `{"give_up_after": "0s"}`},
		{name: "give_up_after negative", in: `{"give_up_after": "-PT1H"}`, want: fe("give_up_after", "must be >= 0, got -1h")},

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

		// decoding
		{name: "unknown top-level field", in: `{"schedul": "FREQ=DAILY"}`, want: fe("schedul", "unknown field")},
		{name: "unknown retry field", in: `{"retry": {"dealys": ["1m"]}}`, want: fe("retry.dealys", "unknown field")},
		{name: "unknown backoff field", in: backoff(`"strategy": "immediate", "factor": 2`),
			want: fe("retry.backoff.factor", "unknown field")},
		{name: "field names are case-sensitive", in: `{"Timeout": "1h"}`, want: fe("Timeout", "unknown field")},
		{name: "duplicate field", in: `{"timeout": "1h", "timeout": "2h"}`, want: fe("timeout", "duplicate field")},
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
		{Field: "timeout", Rule: "must be > 0, got 0s"},
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
			{Field: "timeout", Rule: "must be > 0, got 0s"},
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
				`"disabled_message":"Refresh disabled after {attempts} failed attempt(s): {error}"}`},
		{name: "empty lists", in: `{"retry": {"delays": [], "retry_on": [], "non_retryable": []}}`,
			out: `{"timeout":"1h","retry":{"delays":[],"jitter":0,"non_retryable":[]},"on_exhausted":"disable",` +
				`"disabled_message":"Refresh disabled after {attempts} failed attempt(s): {error}"}`},
		{name: "exponential", in: `{"retry": {"backoff": {"strategy": "exponential", "base": "PT1M"}}}`,
			out: `{"timeout":"1h","retry":{"backoff":{"strategy":"exponential","base":"1m","multiplier":2,` +
				`"max_delay":"720h","max_retries":5},"jitter":0,"non_retryable":["validation","not_found","unauthorized","forbidden"]},` +
				`"on_exhausted":"disable","disabled_message":"Refresh disabled after {attempts} failed attempt(s): {error}"}`},
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
		{name: "default", message: refresh.DefaultPolicy().DisabledMessage, errMsg: "upstream 503", since: since,
			want: "Refresh disabled after 3 failed attempt(s): upstream 503"},
		{name: "empty message uses the default", errMsg: "upstream 503", since: since,
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := refresh.Policy{DisabledMessage: tt.message, Timezone: tt.timezone}
			require.Equal(t, tt.want, p.DisabledReason(3, tt.errMsg, tt.since))
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
