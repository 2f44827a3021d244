package refresh_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestParsePolicyExtensions checks the fields of docs/policy.md: each
// is optional, and each broken rule is named by its field.
func TestParsePolicyExtensions(t *testing.T) {
	t.Parallel()
	fe := func(pairs ...string) []refresh.FieldError {
		var out []refresh.FieldError
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, refresh.FieldError{Field: pairs[i], Rule: pairs[i+1]})
		}
		return out
	}
	const daily = `"schedule": "FREQ=DAILY;BYHOUR=6"`
	tests := []struct {
		name string
		in   string
		want []refresh.FieldError // nil: valid
	}{
		{name: "max_age", in: `{"max_age": "PT2H"}`},
		{name: "max_age negative", in: `{"max_age": "-1m"}`, want: fe("max_age", "must be > 0, got -1m")},
		{name: "max_age zero written out", in: `{"max_age": "0s"}`, want: fe("max_age", "must be > 0, got 0s")},
		{name: "max_age null is left out", in: `{"max_age": null}`},
		{name: "max_age beyond a year", in: `{"max_age": "P366D"}`, want: fe("max_age", "must be <= 8760h, got 8784h")},
		{name: "max_age not a duration", in: `{"max_age": 5}`, want: fe("max_age", `must be a duration like "90s" or "PT5M", got 5`)},

		{name: "debounce", in: `{"trigger_debounce": {"quiet": "30s", "max_wait": "5m"}}`},
		{name: "debounce quiet equal to max_wait", in: `{"trigger_debounce": {"quiet": "5m", "max_wait": "5m"}}`},
		{name: "debounce quiet above max_wait", in: `{"trigger_debounce": {"quiet": "5m1s", "max_wait": "5m"}}`,
			want: fe("trigger_debounce.quiet", "must be <= max_wait (5m), got 5m1s")},
		{name: "debounce quiet missing", in: `{"trigger_debounce": {"max_wait": "5m"}}`,
			want: fe("trigger_debounce.quiet", "required")},
		{name: "debounce both missing", in: `{"trigger_debounce": {}}`,
			want: fe("trigger_debounce.quiet", "required", "trigger_debounce.max_wait", "required")},
		{name: "debounce both zero", in: `{"trigger_debounce": {"quiet": "0s", "max_wait": "0s"}}`,
			want: fe("trigger_debounce.quiet", "must be > 0, got 0s", "trigger_debounce.max_wait", "must be > 0, got 0s")},
		{name: "debounce quiet zero", in: `{"trigger_debounce": {"quiet": "0s", "max_wait": "5m"}}`,
			want: fe("trigger_debounce.quiet", "must be > 0, got 0s")},
		{name: "debounce negative max_wait", in: `{"trigger_debounce": {"quiet": "1s", "max_wait": "-5m"}}`,
			want: fe("trigger_debounce.max_wait", "must be > 0, got -5m")},
		{name: "debounce max_wait beyond the maximum delay", in: `{"trigger_debounce": {"quiet": "1s", "max_wait": "P31D"}}`,
			want: fe("trigger_debounce.max_wait", "must be <= 720h, got 744h")},
		{name: "debounce unknown member", in: `{"trigger_debounce": {"quiet": "1s", "max_wait": "1m", "min": "1s"}}`,
			want: fe("trigger_debounce.min", "unknown field")},
		{name: "debounce not an object", in: `{"trigger_debounce": "30s"}`,
			want: fe("trigger_debounce", `must be an object, got "30s"`)},
		{name: "debounce null is left out", in: `{"trigger_debounce": null}`},

		{name: "max_snooze", in: `{"max_snooze": "P2D"}`},
		{name: "max_snooze zero written out", in: `{"max_snooze": "0s"}`, want: fe("max_snooze", "must be > 0, got 0s")},
		{name: "max_snooze negative", in: `{"max_snooze": "-1h"}`, want: fe("max_snooze", "must be > 0, got -1h")},

		{name: "spread", in: `{` + daily + `, "spread": "PT1H"}`},
		{name: "spread of one second", in: `{` + daily + `, "spread": "1s"}`},
		{name: "spread without a schedule", in: `{"spread": "1h"}`, want: fe("spread", "needs a schedule")},
		{name: "spread below a second", in: `{` + daily + `, "spread": "500ms"}`,
			want: fe("spread", "must be a whole number of seconds, got 500ms")},
		{name: "spread not whole seconds", in: `{` + daily + `, "spread": "90.5s"}`,
			want: fe("spread", "must be a whole number of seconds, got 1m30.5s")},
		{name: "spread negative", in: `{` + daily + `, "spread": "-1h"}`, want: fe("spread", "must be > 0, got -1h")},
		{name: "spread zero written out", in: `{` + daily + `, "spread": "0s"}`, want: fe("spread", "must be > 0, got 0s")},

		{name: "max_lateness", in: `{` + daily + `, "max_lateness": "PT30M"}`},
		{name: "max_lateness without a schedule", in: `{"max_lateness": "30m"}`, want: fe("max_lateness", "needs a schedule")},
		{name: "max_lateness zero written out", in: `{` + daily + `, "max_lateness": "0s"}`,
			want: fe("max_lateness", "must be > 0, got 0s")},

		{name: "every rule at once", in: `{"max_age": "-1s", "trigger_debounce": {"quiet": "2m", "max_wait": "1m"},
			"max_snooze": "-1s", "spread": "1h", "max_lateness": "1h"}`,
			want: fe("max_age", "must be > 0, got -1s", "trigger_debounce.quiet", "must be <= max_wait (1m), got 2m",
				"max_snooze", "must be > 0, got -1s", "spread", "needs a schedule", "max_lateness", "needs a schedule")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := fieldErrors(t, tt.in, refresh.DefaultLimits())
			if tt.want == nil && got != nil && got[0].Field == "schedule" {
				t.Fatalf("the test's schedule is refused: %v", got)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// TestParsePolicyExtensionsBadSchedule checks that a schedule that does not
// parse is the only error: spread and max_lateness do not add theirs.
func TestParsePolicyExtensionsBadSchedule(t *testing.T) {
	t.Parallel()
	got := fieldErrors(t, `{"schedule": "FREQ=SOMETIMES", "spread": "1h", "max_lateness": "1h"}`, refresh.DefaultLimits())
	require.Len(t, got, 1)
	require.Equal(t, "schedule", got[0].Field)
}

func TestParsePolicyExtensionValues(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `{"schedule": "FREQ=DAILY;BYHOUR=6", "max_age": "PT2H", "trigger_debounce": {"quiet": "30s", "max_wait": "5m"},
		"max_snooze": "P2D", "spread": "1h", "max_lateness": "30m"}`)
	require.Equal(t, dur(2*time.Hour), p.MaxAge)
	require.Equal(t, refresh.Debounce{Quiet: dur(30 * time.Second), MaxWait: dur(5 * time.Minute)}, p.TriggerDebounce)
	require.True(t, p.Debounced())
	require.Equal(t, dur(48*time.Hour), p.MaxSnooze)
	require.Equal(t, 48*time.Hour, p.SnoozeBound())
	require.Equal(t, dur(time.Hour), p.Spread)
	require.Equal(t, dur(30*time.Minute), p.MaxLateness)

	def := mustPolicy(t, `{}`)
	require.Equal(t, refresh.DefaultPolicy(), def, "no extension is used unless given")
	require.Equal(t, refresh.DefaultMaxSnooze, def.SnoozeBound())
	require.Equal(t, 24*time.Hour, refresh.DefaultMaxSnooze)
}

// TestPolicyExtensionsRoundTrip checks that a policy that uses no extension
// writes none of their fields, and that one that uses them reads back the
// same.
func TestPolicyExtensionsRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		// absent lists members the JSON form must not have.
		absent []string
	}{
		{name: "none used", in: `{"schedule": "FREQ=DAILY"}`,
			absent: []string{"max_age", "trigger_debounce", "max_snooze", "spread", "max_lateness"}},
		{name: "all used", in: `{"schedule": "FREQ=DAILY;BYHOUR=6", "max_age": "PT2H",
			"trigger_debounce": {"quiet": "30s", "max_wait": "5m"}, "max_snooze": "P2D", "spread": "1h", "max_lateness": "30m"}`},
		{name: "some used", in: `{"max_age": "P1D", "max_snooze": "1h"}`,
			absent: []string{"trigger_debounce", "spread", "max_lateness"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustPolicy(t, tt.in)
			out, err := json.Marshal(p)
			require.NoError(t, err)
			var members map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out, &members))
			for _, name := range tt.absent {
				require.NotContains(t, members, name)
			}
			back := mustPolicy(t, string(out))
			require.Equal(t, p, back)
			var plain refresh.Policy
			require.NoError(t, json.Unmarshal(out, &plain))
			require.Equal(t, p, plain)
		})
	}
}

func TestPolicyValidateExtensions(t *testing.T) {
	t.Parallel()
	p := refresh.DefaultPolicy()
	require.NoError(t, p.Validate(refresh.DefaultLimits()), "zero values are not used, not refused")
	p.MaxAge = dur(-time.Second)
	p.TriggerDebounce = refresh.Debounce{MaxWait: dur(time.Minute)}
	p.Spread = dur(time.Hour)
	err := p.Validate(refresh.DefaultLimits())
	require.Equal(t, &refresh.ValidationError{Fields: []refresh.FieldError{
		{Field: "max_age", Rule: "must be > 0, got -1s"},
		{Field: "trigger_debounce.quiet", Rule: "must be > 0, got 0s"},
		{Field: "spread", Rule: "needs a schedule"},
	}}, err)
}

// TestPolicyCheckAtSpread checks that spread stays below the schedule's
// shortest gap among the first 1,000 occurrences after the write.
func TestPolicyCheckAtSpread(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		policy string
		want   string // the rule broken by spread; "": none
	}{
		{name: "daily, spread of a few hours", policy: `{"schedule": "FREQ=DAILY", "spread": "6h"}`},
		{name: "daily, spread just below a day", policy: `{"schedule": "FREQ=DAILY", "spread": "86399s"}`},
		{name: "daily, spread of a day", policy: `{"schedule": "FREQ=DAILY", "spread": "24h"}`,
			want: "must be less than the schedule's shortest gap between occurrences, 24h, got 24h"},
		{name: "twice a day, the shortest gap counts", policy: `{"schedule": "FREQ=DAILY;BYHOUR=6,8", "spread": "2h"}`,
			want: "must be less than the schedule's shortest gap between occurrences, 2h, got 2h"},
		{name: "twice a day, below the shortest gap", policy: `{"schedule": "FREQ=DAILY;BYHOUR=6,8", "spread": "1h59m59s"}`},
		{name: "a single occurrence has no gap", policy: `{"schedule": "DTSTART:20260401T000000Z\nRRULE:FREQ=DAILY;COUNT=1", "spread": "P10D"}`},
		{name: "no spread", policy: `{"schedule": "FREQ=MINUTELY"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := mustPolicy(t, tt.policy).CheckAt(now, now, refresh.DefaultLimits())
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "spread", Rule: tt.want}}}, err)
		})
	}
}
