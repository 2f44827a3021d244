package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// debounceModel returns a model with the daily schedule, a timeout of 1h
// and trigger_debounce {quiet 30s, max_wait 5m}, planned at 15:00.
func debounceModel(t *testing.T) refresh.Model {
	t.Helper()
	m := transitionModel(t, `{`+parisSchedule+`, "timeout": "1h", "trigger_debounce": {"quiet": "30s", "max_wait": "5m"}}`)
	m.RefreshAt = occAfternoon
	return m
}

// TestDebounceTrigger checks the window: the first trigger sets t0, each
// sets debounce_at = min(now + quiet, t0 + max_wait).
func TestDebounceTrigger(t *testing.T) {
	t.Parallel()
	t0 := morning
	tests := []struct {
		name     string
		triggers []time.Duration // after t0
		want     time.Duration   // debounce_at after t0
	}{
		{name: "one trigger: quiet after it", triggers: []time.Duration{0}, want: 30 * time.Second},
		{name: "a second one pushes it", triggers: []time.Duration{0, 20 * time.Second}, want: 50 * time.Second},
		{name: "quiet reaching max_wait exactly", triggers: []time.Duration{0, 4*time.Minute + 30*time.Second}, want: 5 * time.Minute},
		{name: "one ns before quiet reaches max_wait", triggers: []time.Duration{0, 4*time.Minute + 30*time.Second - time.Nanosecond},
			want: 5*time.Minute - time.Nanosecond},
		{name: "capped at max_wait after t0", triggers: []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 4*time.Minute + 50*time.Second},
			want: 5 * time.Minute},
		{name: "a trigger after debounce_at, before the tick, still joins", triggers: []time.Duration{0, 40 * time.Second},
			want: 70 * time.Second},
		{name: "a trigger past max_wait, before the tick: due at once", triggers: []time.Duration{0, 4 * time.Minute, 6 * time.Minute},
			want: 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := runningAttempt(t, debounceModel(t), "u1", 1, t0.Add(-time.Minute))
			m := before
			for i, after := range tt.triggers {
				var d refresh.Decision
				m, d = refresh.Trigger(m, t0.Add(after))
				require.Equal(t, refresh.EventTrigger, d.Event, "every trigger publishes trigger")
				require.Equal(t, "trigger.debounce", d.Rule)
				require.False(t, d.Unchanged)
				require.Empty(t, d.UID, "nothing is superseded before the window takes effect")
				require.Contains(t, d.Why, map[bool]string{true: "opens a debounce window", false: "joins the window"}[i == 0])
			}
			want := before
			want.DebounceSince = t0
			want.DebounceAt = t0.Add(tt.want)
			requireModel(t, want, m) // the running attempt goes on, refresh_at stays
		})
	}
}

func TestApplyDebounce(t *testing.T) {
	t.Parallel()
	t0 := morning
	at := t0.Add(30 * time.Second)
	lastErr := &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: t0.Add(-time.Hour)}
	tests := []struct {
		name  string
		state func(t *testing.T, m refresh.Model) refresh.Model
		cause string
		now   time.Time
		// want
		none         bool // nothing due
		superseded   string
		keepDisabled bool
	}{
		{name: "one ns before debounce_at", now: at.Add(-time.Nanosecond), none: true},
		{name: "idle: plans a start now", now: at},
		{name: "a late tick plans at its time", now: at.Add(time.Hour)},
		{name: "supersedes the running attempt", now: at, superseded: "u1",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				return runningAttempt(t, m, "u1", 2, t0.Add(-time.Minute))
			}},
		{name: "clears a pending retry and the streak", now: at, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 2, 2, t0.Add(-time.Hour), lastErr
			m.RefreshAt = t0.Add(time.Hour)
			return m
		}},
		{name: "clears the snooze", now: at, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.SnoozedSince, m.RefreshAt = t0.Add(-time.Hour), t0.Add(time.Hour)
			return m
		}},
		{name: "an API trigger clears disabled", now: at, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 4, 4, t0.Add(-time.Hour), lastErr
			m.DisabledAt, m.DisabledReason, m.RefreshAt = t0.Add(-time.Minute), "gone", null
			return m
		}},
		{name: "upstream triggers only leave disabled", now: at, cause: refresh.CauseUpstream, keepDisabled: true,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = runningAttempt(t, m, "u1", 1, t0.Add(-time.Minute))
				m, _ = refresh.Failed(m, refresh.Failure{Kind: "validation", Message: "bad", Retryable: true}, t0.Add(10*time.Second))
				require.True(t, m.Disabled())
				return m
			}},
		{name: "paused: plans now and stays paused", now: at, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.Paused = true
			return m
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := debounceModel(t)
			if tt.state != nil && tt.cause != refresh.CauseUpstream {
				m = tt.state(t, m)
			}
			var d refresh.Decision
			m, d = refresh.TriggerFrom(m, tt.cause, t0)
			require.Equal(t, refresh.EventTrigger, d.Event)
			if tt.state != nil && tt.cause == refresh.CauseUpstream {
				m = tt.state(t, m) // disabled while the window is open
			}
			before := m
			requireTime(t, at, before.DebounceAt)

			got, d := refresh.ApplyDebounce(before, tt.now)
			if tt.none {
				require.Equal(t, refresh.Decision{}, d)
				requireModel(t, before, got)
				return
			}
			require.Equal(t, refresh.EventDebounce, d.Event)
			require.Equal(t, tt.cause, d.Cause)
			require.NotEmpty(t, d.Why)
			want := before
			want.DebounceAt, want.DebounceSince, want.DebounceCause = null, null, ""
			if tt.keepDisabled {
				requireModel(t, want, got)
				require.Empty(t, d.UID)
				return
			}
			want.AttemptUID, want.StartedAt, want.DeadlineAt, want.StatusMessage = "", null, null, ""
			want.AttemptNo, want.ConsecutiveFailures, want.FailingSince = 0, 0, null
			want.DisabledAt, want.DisabledReason, want.SnoozedSince = null, "", null
			want.RefreshAt = tt.now
			requireModel(t, want, got)
			require.Equal(t, tt.superseded, d.UID)
			if tt.superseded != "" {
				requireTime(t, before.DeadlineAt, d.Deadline)
				_, sd := refresh.ApplyOutcome(got, refresh.Outcome{AttemptUID: tt.superseded, Type: refresh.OutcomeSuccess}, tt.now)
				require.Equal(t, refresh.EventStale, sd.Event)
			}
			require.Equal(t, !before.Paused, got.CanStart(tt.now))
		})
	}
}

// TestDebounceInteractions checks what docs/policy.md settles between a window
// and the rest: the running attempt's outcome, cancel, pause, the
// scheduler's tick, and an API trigger joining upstream ones.
func TestDebounceInteractions(t *testing.T) {
	t.Parallel()
	t0 := morning
	at := t0.Add(30 * time.Second)

	t.Run("an outcome meanwhile applies and leaves debounce_at", func(t *testing.T) {
		t.Parallel()
		m := runningAttempt(t, debounceModel(t), "u1", 1, t0.Add(-time.Minute))
		m, _ = refresh.Trigger(m, t0)
		m, d := refresh.ApplyOutcome(m, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}, t0.Add(10*time.Second))
		require.Equal(t, refresh.EventSuccess, d.Event)
		requireTime(t, occAfternoon, m.RefreshAt)
		requireTime(t, at, m.DebounceAt)
		requireTime(t, at, m.DueAt())
		steps := refresh.TickAll(m, refresh.TickInput{UID: "u2"}, at)
		require.Equal(t, []string{refresh.EventDebounce, refresh.EventStart}, events(steps))
		require.Empty(t, steps[0].Decision.UID, "nothing left to supersede")
	})
	t.Run("a failure meanwhile applies too", func(t *testing.T) {
		t.Parallel()
		m := runningAttempt(t, debounceModel(t), "u1", 1, t0.Add(-time.Minute))
		m, _ = refresh.Trigger(m, t0)
		m, d := refresh.ApplyOutcome(m, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeFailure, Kind: "http_503"}, t0.Add(10*time.Second))
		require.Equal(t, refresh.DecisionRetry, d.Plan)
		requireTime(t, at, m.DebounceAt)
		m, d = refresh.ApplyDebounce(m, at)
		require.Equal(t, refresh.EventDebounce, d.Event)
		require.Zero(t, m.ConsecutiveFailures, "the debounced trigger clears the streak")
	})
	t.Run("the tick supersedes the running attempt, then starts", func(t *testing.T) {
		t.Parallel()
		m := runningAttempt(t, debounceModel(t), "u1", 1, t0.Add(-time.Minute))
		m, _ = refresh.Trigger(m, t0)
		requireTime(t, at, m.DueAt(), "the window comes before the deadline")
		steps := refresh.TickAll(m, refresh.TickInput{UID: "u2"}, at)
		require.Equal(t, []string{refresh.EventDebounce, refresh.EventStart}, events(steps))
		require.Equal(t, "u1", steps[0].Decision.UID)
		require.Equal(t, "u2", steps[1].Model.AttemptUID)
		require.Equal(t, 1, steps[1].Model.AttemptNo)
	})
	t.Run("cancel closes the window", func(t *testing.T) {
		t.Parallel()
		m, _ := refresh.Trigger(debounceModel(t), t0)
		m, d := refresh.Cancel(m, t0.Add(time.Second))
		require.False(t, d.Unchanged)
		require.True(t, m.DebounceAt.IsZero())
		require.True(t, m.DebounceSince.IsZero())
		requireTime(t, occAfternoon, m.DueAt())
		_, dd := refresh.ApplyDebounce(m, at)
		require.Empty(t, dd.Event)
	})
	t.Run("cancel on a disabled model closes the window only", func(t *testing.T) {
		t.Parallel()
		m, _ := refresh.Trigger(debounceModel(t), t0)
		m.DisabledAt, m.DisabledReason, m.RefreshAt, m.AttemptNo = t0, "gone", null, 3
		got, d := refresh.Cancel(m, t0.Add(time.Second))
		require.False(t, d.Unchanged)
		want := m
		want.DebounceAt, want.DebounceSince = null, null
		requireModel(t, want, got)
	})
	t.Run("paused: the window takes effect, the start waits for resume", func(t *testing.T) {
		t.Parallel()
		m, _ := refresh.Pause(debounceModel(t))
		m, _ = refresh.Trigger(m, t0)
		requireTime(t, at, m.DueAt(), "a paused model wakes for its window")
		steps := refresh.TickAll(m, refresh.TickInput{UID: "u1"}, at)
		require.Equal(t, []string{refresh.EventDebounce}, events(steps))
		m = steps[0].Model
		require.True(t, m.DueAt().IsZero(), "paused and idle: nothing to wake for")
		m, _ = refresh.Resume(m, at.Add(time.Hour))
		steps = refresh.TickAll(m, refresh.TickInput{UID: "u1"}, at.Add(time.Hour))
		require.Equal(t, []string{refresh.EventStart}, events(steps))
	})
	t.Run("an API trigger joining upstream ones clears disabled", func(t *testing.T) {
		t.Parallel()
		m, _ := refresh.TriggerFrom(debounceModel(t), refresh.CauseUpstream, t0)
		require.Equal(t, refresh.CauseUpstream, m.DebounceCause)
		m, _ = refresh.TriggerFrom(m, refresh.CauseUpstream, t0.Add(time.Second))
		require.Equal(t, refresh.CauseUpstream, m.DebounceCause)
		m, _ = refresh.Trigger(m, t0.Add(2*time.Second))
		require.Empty(t, m.DebounceCause)
		m, _ = refresh.TriggerFrom(m, refresh.CauseUpstream, t0.Add(3*time.Second))
		require.Empty(t, m.DebounceCause, "the window holds an API trigger")
		m.DisabledAt, m.DisabledReason, m.RefreshAt = t0, "gone", null
		m, d := refresh.ApplyDebounce(m, t0.Add(time.Hour))
		require.Equal(t, refresh.EventDebounce, d.Event)
		require.False(t, m.Disabled())
	})
	t.Run("a trigger without debounce closes a window left by an edit", func(t *testing.T) {
		t.Parallel()
		m, _ := refresh.Trigger(debounceModel(t), t0)
		m, _ = refresh.Edit(m, mustPolicy(t, `{`+parisSchedule+`}`), t0.Add(time.Second))
		requireTime(t, at, m.DebounceAt, "an edit leaves the open window")
		m, d := refresh.Trigger(m, t0.Add(2*time.Second))
		require.Equal(t, "trigger", d.Rule)
		require.True(t, m.DebounceAt.IsZero())
		requireTime(t, t0.Add(2*time.Second), m.RefreshAt)
	})
}
