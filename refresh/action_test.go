package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestEdit checks the plan a write of the definition gives a model.
func TestEdit(t *testing.T) {
	t.Parallel()
	now := morning
	const hourly = `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY", "timeout": "30m"}`
	tests := []struct {
		name      string
		state     func(t *testing.T, m refresh.Model) refresh.Model
		policy    string
		late      time.Duration // the edit comes this long after now
		refreshAt time.Time
	}{
		{name: "idle: first(now) of the new schedule", policy: hourly, refreshAt: now},
		{name: "one ns after the hour: the next one", policy: hourly, late: time.Nanosecond, refreshAt: now.Add(time.Hour)},
		{name: "on demand: nothing planned", policy: `{}`, refreshAt: null},
		{name: "a pending retry keeps its time", policy: hourly, refreshAt: now.Add(time.Minute),
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.RefreshAt = 1, 1, now.Add(-time.Minute), now.Add(time.Minute)
				return m
			}},
		{name: "a snooze keeps its time", policy: hourly, refreshAt: now.Add(20 * time.Minute),
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.SnoozedSince, m.RefreshAt = now.Add(-time.Hour), now.Add(20*time.Minute)
				return m
			}},
		{name: "disabled: nothing planned", policy: hourly, refreshAt: null,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.DisabledAt, m.DisabledReason, m.RefreshAt = now.Add(-time.Hour), "gone", null
				return m
			}},
		{name: "a spread shifts the plan", policy: `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY", "spread": "12h"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := transitionModel(t, `{`+parisSchedule+`, "timeout": "1h"}`)
			before.RefreshAt = occAfternoon
			if tt.state != nil {
				before = tt.state(t, before)
			}
			p := mustPolicy(t, tt.policy)
			got, d := refresh.Edit(before, p, now.Add(tt.late))
			require.Empty(t, d.Event)
			require.Equal(t, "edit", d.Rule)
			require.NotEmpty(t, d.Why)
			want := tt.refreshAt
			if p.Spread > 0 {
				off := got.SpreadOffset()
				want = time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC).Add(off)
				if off >= 10*time.Hour {
					want = want.Add(-24 * time.Hour)
				}
			}
			requireTime(t, want, got.RefreshAt)
			require.Equal(t, p, got.Policy)
		})
	}

	t.Run("off_schedule goes with max_lateness", func(t *testing.T) {
		t.Parallel()
		m := transitionModel(t, `{`+parisSchedule+`, "max_lateness": "1h"}`)
		m, _ = refresh.Trigger(m, occMorning)
		require.True(t, m.OffSchedule)
		m.AttemptNo = 1 // keep the plan
		kept, _ := refresh.Edit(m, m.Policy, morning)
		require.True(t, kept.OffSchedule)
		dropped, _ := refresh.Edit(m, mustPolicy(t, `{`+parisSchedule+`}`), morning)
		require.False(t, dropped.OffSchedule)
	})
}

// TestUpdate checks a write of the definition of an existing model: a
// change re-enables a disabled model as a trigger; a write that changes
// nothing leaves it disabled; other models keep their run state.
func TestUpdate(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	const debounced = `{` + parisSchedule + `, "timeout": "1h", "trigger_debounce": {"quiet": "30s", "max_wait": "5m"}}`
	now := morning
	lastErr := &refresh.LastError{Kind: "validation", Message: "bad input_url", At: now.Add(-time.Hour)}
	disabled := func(t *testing.T, p string) refresh.Model {
		m := transitionModel(t, p)
		m.Queue, m.Payload = "imports", []byte(`{"input_url": "htp:/broken"}`)
		m.Upstreams, m.RateKey = []string{"orders"}, "example.com"
		m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 3, 3, now.Add(-2*time.Hour), lastErr
		m.DisabledAt, m.DisabledReason = now.Add(-time.Hour), "Refresh disabled after 3 failed attempt(s)."
		return m
	}
	same := func(m refresh.Model) refresh.Definition {
		return refresh.Definition{Queue: m.Queue, Payload: m.Payload, Policy: m.Policy, Upstreams: m.Upstreams, UpstreamsMode: m.UpstreamsMode, RateKey: m.RateKey}
	}
	tests := []struct {
		name    string
		policy  string
		state   func(m refresh.Model) refresh.Model // from a disabled model
		def     func(t *testing.T, m refresh.Model) refresh.Definition
		trigger bool
		// event is the decision's event ("" none), also the trigger's
		// rule when event is update.
		event, also string
		enabled     bool // the write clears the disabled state at once
	}{
		{name: "disabled, payload replaced", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition {
				d := same(m)
				d.Payload = []byte(`{"input_url": "https://example.com/a.csv"}`)
				return d
			}},
		{name: "disabled, queue changed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Queue = "imports-2"; return d }},
		{name: "disabled, policy changed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition {
				d := same(m)
				d.Policy = mustPolicy(t, `{`+parisSchedule+`, "timeout": "2h"}`)
				return d
			}},
		{name: "disabled, upstreams changed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Upstreams = nil; return d }},
		{name: "disabled, upstreams mode changed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition {
				d := same(m)
				d.UpstreamsMode = refresh.UpstreamsAny
				return d
			}},
		{name: "disabled, rate_key changed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition {
				d := same(m)
				d.RateKey = "api.example.com"
				return d
			}},
		{name: "disabled, rate_key removed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.RateKey = ""; return d }},
		{name: "disabled, changed and trigger: one trigger", policy: policy, trigger: true, event: refresh.EventUpdate, also: "trigger", enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Queue = "imports-2"; return d }},
		{name: "disabled and paused: re-enabled, starts when resumed", policy: policy, event: refresh.EventUpdate, also: "trigger", enabled: true,
			state: func(m refresh.Model) refresh.Model { m.Paused = true; return m },
			def:   func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Queue = "imports-2"; return d }},
		{name: "disabled, debounced: the change joins the window", policy: debounced, event: refresh.EventUpdate, also: "trigger.debounce",
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Queue = "imports-2"; return d }},
		{name: "disabled, window of upstream triggers: the change makes it clear", policy: debounced, event: refresh.EventUpdate, also: "trigger.debounce",
			state: func(m refresh.Model) refresh.Model {
				m.DebounceSince, m.DebounceAt, m.DebounceCause = now.Add(-10*time.Second), now.Add(20*time.Second), refresh.CauseUpstream
				return m
			},
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Queue = "imports-2"; return d }},
		{name: "disabled, debounce added by the change", policy: policy, event: refresh.EventUpdate, also: "trigger.debounce",
			def: func(t *testing.T, m refresh.Model) refresh.Definition {
				d := same(m)
				d.Policy = mustPolicy(t, debounced)
				return d
			}},
		{name: "disabled, nothing changed: stays disabled", policy: policy, def: func(t *testing.T, m refresh.Model) refresh.Definition { return same(m) }},
		{name: "disabled, payload laid out anew: stays disabled", policy: policy,
			def: func(t *testing.T, m refresh.Model) refresh.Definition {
				d := same(m)
				d.Payload = []byte(`{ "input_url":"htp:/broken" }`)
				return d
			}},
		{name: "disabled, nothing changed, trigger: the trigger clears it", policy: policy, trigger: true, event: refresh.EventTrigger, enabled: true,
			def: func(t *testing.T, m refresh.Model) refresh.Definition { return same(m) }},
		{name: "not disabled, changed: keeps its run state", policy: policy,
			state: func(m refresh.Model) refresh.Model {
				m.DisabledAt, m.DisabledReason = null, ""
				m.RefreshAt = now.Add(5 * time.Minute) // a pending retry
				return m
			},
			def: func(t *testing.T, m refresh.Model) refresh.Definition { d := same(m); d.Queue = "imports-2"; return d }},
		{name: "not disabled, trigger", policy: policy, trigger: true, event: refresh.EventTrigger, enabled: true,
			state: func(m refresh.Model) refresh.Model { m.DisabledAt, m.DisabledReason = null, ""; return m },
			def:   func(t *testing.T, m refresh.Model) refresh.Definition { return same(m) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := disabled(t, tt.policy)
			if tt.state != nil {
				before = tt.state(before)
			}
			def := tt.def(t, before)
			got, d := refresh.Update(before, def, tt.trigger, now)

			require.Equal(t, tt.event, d.Event, d.Why)
			require.NotEmpty(t, d.Why)
			require.Equal(t, def.Queue, got.Queue)
			require.Equal(t, def.Payload, got.Payload)
			require.Equal(t, def.Upstreams, got.Upstreams)
			require.Equal(t, def.UpstreamsMode, got.UpstreamsMode)
			require.Equal(t, def.RateKey, got.RateKey)
			require.Equal(t, def.Policy, got.Policy)
			require.Equal(t, before.Paused, got.Paused)
			if tt.event == refresh.EventUpdate {
				require.Equal(t, "update.disabled", d.Rule)
				require.NotNil(t, d.Also)
				require.Equal(t, refresh.EventTrigger, d.Also.Event)
				require.Equal(t, tt.also, d.Also.Rule)
				require.Empty(t, d.Also.Cause, "an update is no upstream trigger")
				require.Len(t, refresh.NewEvents(got, d, now), 2, "update, then trigger")
			} else {
				require.Nil(t, d.Also)
			}

			switch {
			case tt.enabled:
				require.False(t, got.Disabled())
				require.Zero(t, got.AttemptNo)
				require.Zero(t, got.ConsecutiveFailures)
				requireTime(t, null, got.FailingSince)
				requireTime(t, now, got.RefreshAt, "the next attempt starts now")
				require.Equal(t, !before.Paused, got.CanStart(now))
			case tt.also == "trigger.debounce":
				// Disabled until the window takes effect, then re-enabled.
				require.True(t, got.Disabled())
				requireTime(t, now.Add(30*time.Second), got.DebounceAt)
				applied, ad := refresh.ApplyDebounce(got, got.DebounceAt)
				require.Equal(t, refresh.EventDebounce, ad.Event)
				require.False(t, applied.Disabled(), ad.Why)
				require.Zero(t, applied.ConsecutiveFailures)
				requireTime(t, got.DebounceAt, applied.RefreshAt)
			case before.Disabled():
				requireModel(t, before, func() refresh.Model { m := got; m.Payload = before.Payload; return m }())
				require.False(t, got.CanStart(now.Add(24*time.Hour)), "still disabled")
			default:
				requireTime(t, before.RefreshAt, got.RefreshAt, "a pending retry keeps its time")
				require.Equal(t, before.AttemptNo, got.AttemptNo)
			}
		})
	}

	t.Run("an upstream trigger still leaves it disabled", func(t *testing.T) {
		t.Parallel()
		m := disabled(t, policy)
		m, d := refresh.Update(m, same(m), false, now)
		require.Empty(t, d.Event)
		m, d = refresh.TriggerFrom(m, refresh.CauseUpstream, now)
		require.True(t, d.Unchanged)
		require.True(t, m.Disabled())
	})
}
