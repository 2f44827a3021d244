package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestTick checks the order of what Tick applies at one instant: timeout,
// debounce, freshness, then skip, wait or start.
func TestTick(t *testing.T) {
	t.Parallel()
	now := morning
	full := refresh.Limit{Kind: refresh.LimitQueue, Key: "default", MaxRunning: 1}
	const ext = `{` + parisSchedule + `, "timeout": "1h", "max_age": "2h", "max_lateness": "1h",
		"trigger_debounce": {"quiet": "30s", "max_wait": "5m"}, "retry": {"delays": ["0s", "1m"]}}`
	model := func(t *testing.T) refresh.Model {
		m := transitionModel(t, ext)
		m.LastSuccessAt = now.Add(-time.Hour) // overdue at 11:00
		m.RefreshAt = occAfternoon
		return m
	}
	tests := []struct {
		name   string
		state  func(t *testing.T) refresh.Model
		in     refresh.TickInput
		events []string
		phase  string // of the freshness_lost
	}{
		{name: "nothing due", state: model},
		{name: "a running attempt before its deadline", state: func(t *testing.T) refresh.Model {
			return runningAttempt(t, model(t), "u1", 1, now.Add(-time.Minute))
		}},
		{name: "a timeout with a retry at once, then its start", events: []string{refresh.EventTimeout, refresh.EventStart},
			state: func(t *testing.T) refresh.Model { return runningAttempt(t, model(t), "u1", 1, now.Add(-time.Hour)) }},
		{name: "a timeout with a later retry", events: []string{refresh.EventTimeout},
			state: func(t *testing.T) refresh.Model { return runningAttempt(t, model(t), "u1", 2, now.Add(-time.Hour)) }},
		{name: "a due start", events: []string{refresh.EventStart},
			state: func(t *testing.T) refresh.Model { m := model(t); m.RefreshAt = now; return m }},
		{name: "a debounce supersedes, then the start", events: []string{refresh.EventDebounce, refresh.EventStart},
			state: func(t *testing.T) refresh.Model {
				m := runningAttempt(t, model(t), "u1", 1, now.Add(-time.Minute))
				m, _ = refresh.Trigger(m, now.Add(-time.Minute))
				return m
			}},
		{name: "timeout, debounce, freshness, start", phase: refresh.PhaseScheduled,
			events: []string{refresh.EventTimeout, refresh.EventDebounce, refresh.EventFreshnessLost, refresh.EventStart},
			state: func(t *testing.T) refresh.Model {
				m := runningAttempt(t, model(t), "u1", 2, now.Add(-time.Hour))
				m, _ = refresh.Trigger(m, now.Add(-time.Minute))
				m.LastSuccessAt = now.Add(-2 * time.Hour)
				return m
			}},
		{name: "freshness of a paused model", phase: refresh.PhasePaused, events: []string{refresh.EventFreshnessLost},
			state: func(t *testing.T) refresh.Model {
				m := model(t)
				m.Paused, m.RefreshAt, m.LastSuccessAt = true, now.Add(-time.Hour), now.Add(-2*time.Hour)
				return m
			}},
		{name: "freshness of a disabled model", phase: refresh.PhaseDisabled, events: []string{refresh.EventFreshnessLost},
			state: func(t *testing.T) refresh.Model {
				m := model(t)
				m.DisabledAt, m.DisabledReason, m.RefreshAt, m.LastSuccessAt = now.Add(-time.Hour), "gone", null, now.Add(-3*time.Hour)
				return m
			}},
		{name: "freshness of a model waiting for a slot", phase: refresh.PhaseWaitingForSlot, in: refresh.TickInput{FullLimit: full},
			events: []string{refresh.EventFreshnessLost},
			state: func(t *testing.T) refresh.Model {
				m := model(t)
				m.RefreshAt, m.WaitingForSlot, m.WaitingLimit, m.LastSuccessAt = now.Add(-time.Minute), true, full.Name(), now.Add(-2*time.Hour)
				return m
			}},
		{name: "a full limit: the start waits", in: refresh.TickInput{FullLimit: full}, events: []string{refresh.EventWait},
			state: func(t *testing.T) refresh.Model { m := model(t); m.RefreshAt = now; return m }},
		{name: "a wait is made once", in: refresh.TickInput{FullLimit: full},
			state: func(t *testing.T) refresh.Model {
				m := model(t)
				m.RefreshAt, m.WaitingForSlot, m.WaitingLimit = now, true, full.Name()
				return m
			}},
		{name: "a slot frees: the waiting model starts", events: []string{refresh.EventStart},
			state: func(t *testing.T) refresh.Model { m := model(t); m.RefreshAt, m.WaitingForSlot = now, true; return m }},
		{name: "a late start is skipped rather than waiting", in: refresh.TickInput{FullLimit: full}, events: []string{refresh.EventSkip},
			state: func(t *testing.T) refresh.Model {
				m := model(t)
				m.RefreshAt, m.WaitingForSlot = occMorning, true
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.state(t)
			in := tt.in
			in.UID = "u9"
			steps := refresh.TickAll(before, in, now)
			require.Equal(t, tt.events, events(steps))
			prev := before
			for _, s := range steps {
				// Each step is what Tick does to the model before it.
				after, d := refresh.Tick(prev, in, now)
				require.Equal(t, s.Decision, d)
				requireModel(t, s.Model, after)
				require.NotEmpty(t, d.Why)
				if d.Event == refresh.EventFreshnessLost {
					require.Equal(t, tt.phase, d.Phase)
				}
				if d.Event == refresh.EventStart {
					require.Equal(t, "u9", after.AttemptUID)
					require.False(t, after.WaitingForSlot)
				}
				if d.Event == refresh.EventWait {
					require.True(t, after.WaitingForSlot)
					require.Equal(t, full.String(), d.Reason)
					require.False(t, after.DueAt().After(now), "a waiting model stays due")
				}
				prev = after
			}
			_, d := refresh.Tick(prev, in, now)
			require.Empty(t, d.Event, "nothing more is due")
		})
	}
}

func TestDueAt(t *testing.T) {
	t.Parallel()
	deadline := morning.Add(30 * time.Minute)
	const withAge = `{` + parisSchedule + `, "timeout": "1h", "max_age": "2h"}`
	tests := []struct {
		name   string
		policy string
		state  func(m *refresh.Model)
		want   time.Time
	}{
		{name: "nothing planned", policy: `{}`, want: null},
		{name: "a planned start", policy: `{}`, state: func(m *refresh.Model) { m.RefreshAt = occAfternoon }, want: occAfternoon},
		{name: "a running attempt: its deadline", policy: `{}`, state: func(m *refresh.Model) {
			m.AttemptUID, m.DeadlineAt, m.RefreshAt = "u1", deadline, deadline
		}, want: deadline},
		{name: "paused and idle: nothing", policy: `{}`, state: func(m *refresh.Model) { m.RefreshAt, m.Paused = occAfternoon, true }, want: null},
		{name: "paused and running: its deadline", policy: `{}`, state: func(m *refresh.Model) {
			m.AttemptUID, m.DeadlineAt, m.RefreshAt, m.Paused = "u1", deadline, deadline, true
		}, want: deadline},
		{name: "paused with a debounce window", policy: `{}`, state: func(m *refresh.Model) {
			m.RefreshAt, m.Paused, m.DebounceAt = occAfternoon, true, morning
		}, want: morning},
		{name: "a window before the plan", policy: `{}`, state: func(m *refresh.Model) { m.RefreshAt, m.DebounceAt = occAfternoon, morning },
			want: morning},
		{name: "a plan before the window", policy: `{}`, state: func(m *refresh.Model) { m.RefreshAt, m.DebounceAt = morning, occAfternoon },
			want: morning},
		{name: "waiting for a slot: still due", policy: `{}`, state: func(m *refresh.Model) { m.RefreshAt, m.WaitingForSlot = occMorning, true },
			want: occMorning},
		{name: "the overdue instant first", policy: withAge, state: func(m *refresh.Model) {
			m.LastSuccessAt, m.RefreshAt = morning.Add(-time.Hour), occAfternoon
		}, want: morning.Add(time.Hour)},
		{name: "the overdue instant of a model never run", policy: withAge, want: modelCreated.Add(2 * time.Hour)},
		{name: "the overdue instant of a disabled model", policy: withAge, state: func(m *refresh.Model) {
			m.LastSuccessAt, m.DisabledAt, m.DisabledReason = morning, morning, "gone"
		}, want: morning.Add(2 * time.Hour)},
		{name: "the overdue instant of a paused model", policy: withAge, state: func(m *refresh.Model) {
			m.LastSuccessAt, m.RefreshAt, m.Paused = morning, occAfternoon, true
		}, want: morning.Add(2 * time.Hour)},
		{name: "an open episode does not count", policy: withAge, state: func(m *refresh.Model) {
			m.LastSuccessAt, m.RefreshAt, m.OverdueSince = morning.Add(-3*time.Hour), occAfternoon, morning.Add(-time.Hour)
		}, want: occAfternoon},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := transitionModel(t, tt.policy)
			if tt.state != nil {
				tt.state(&m)
			}
			requireTime(t, tt.want, m.DueAt())
		})
	}
}

// TestSlotWaitEnds checks the transitions that end a slot wait.
func TestSlotWaitEnds(t *testing.T) {
	t.Parallel()
	now := morning
	waiting := func(t *testing.T) refresh.Model {
		m := transitionModel(t, `{`+parisSchedule+`, "timeout": "1h"}`)
		m.RefreshAt = now
		acme := refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2}
		m, d := refresh.WaitForSlot(m, refresh.TickInput{FullLimit: acme}, now)
		require.Equal(t, refresh.EventWait, d.Event)
		require.Equal(t, `prefix "acme-" (max_running 2)`, d.Reason)
		require.Equal(t, refresh.PhaseWaitingForSlot, m.Phase())
		require.Equal(t, "prefix:acme-", m.WaitingLimit)
		_, again := refresh.WaitForSlot(m, refresh.TickInput{FullLimit: acme}, now)
		require.Empty(t, again.Event, "once per wait")
		// Offered a slot of acme-, the model finds its queue's limit full:
		// it now waits for that one, with a wait event naming it.
		exports := refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 1}
		other, d := refresh.WaitForSlot(m, refresh.TickInput{FullLimit: exports}, now)
		require.Equal(t, refresh.EventWait, d.Event)
		require.Equal(t, `queue "exports" (max_running 1)`, d.Reason)
		require.Equal(t, "queue:exports", other.WaitingLimit)
		return m
	}
	tests := []struct {
		name  string
		apply func(m refresh.Model) refresh.Model
		wait  bool
	}{
		{name: "start", apply: func(m refresh.Model) refresh.Model { m, _ = refresh.Start(m, "u1", now); return m }},
		{name: "pause", apply: func(m refresh.Model) refresh.Model { m, _ = refresh.Pause(m); return m }},
		{name: "cancel", apply: func(m refresh.Model) refresh.Model { m, _ = refresh.Cancel(m, now); return m }},
		{name: "an edit that plans later", apply: func(m refresh.Model) refresh.Model {
			m, _ = refresh.Edit(m, m.Policy, now.Add(time.Second))
			return m
		}},
		{name: "a trigger: still due, still waiting", wait: true, apply: func(m refresh.Model) refresh.Model {
			m, _ = refresh.Trigger(m, now)
			return m
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.apply(waiting(t))
			require.Equal(t, tt.wait, got.WaitingForSlot)
		})
	}
}

// BenchmarkTick measures what the scheduler applies to a due model: the
// start of a model without extensions (as Start alone), and of one that
// uses them all (freshness, debounce, catch-up, spread), and a late start
// the catch-up window skips.
func BenchmarkTick(b *testing.B) {
	now := morning
	const all = `, "timeout": "1h", "max_age": "P1D", "max_lateness": "1h", "spread": "1h",
		"trigger_debounce": {"quiet": "30s", "max_wait": "5m"}}`
	plain := transitionModel(b, `{`+parisSchedule+`, "timeout": "1h"}`)
	plain.RefreshAt = now
	ext := transitionModel(b, `{`+parisSchedule+all)
	ext.LastSuccessAt, ext.RefreshAt = now.Add(-time.Hour), now
	late := ext
	late.RefreshAt = occMorning.Add(ext.SpreadOffset()).Add(-48 * time.Hour)
	benches := []struct {
		name  string
		m     refresh.Model
		event string
	}{
		{"start/plain", plain, refresh.EventStart},
		{"start/extensions", ext, refresh.EventStart},
		{"skip/extensions", late, refresh.EventSkip},
	}
	in := refresh.TickInput{UID: "u1"}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			if _, d := refresh.Tick(bb.m, in, now); d.Event != bb.event {
				b.Fatalf("event %q, want %q", d.Event, bb.event)
			}
			b.ReportAllocs()
			for b.Loop() {
				benchModel, benchDecision = refresh.Tick(bb.m, in, now)
			}
		})
	}
	b.Run("due_at/extensions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			benchTime = ext.DueAt()
		}
	})
}

var benchTime time.Time
