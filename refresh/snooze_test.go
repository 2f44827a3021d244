package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// snoozeModel returns a model with the daily schedule, a timeout of 1h,
// max_snooze 6h and three retries, running attempt n (uid "u1") started at
// started, in a round with failures failures.
func snoozeModel(t *testing.T, n, failures int, started time.Time) refresh.Model {
	t.Helper()
	m := transitionModel(t, `{`+parisSchedule+`, "timeout": "1h", "max_snooze": "6h", "retry": {"delays": ["0s", "1m", "5m"]}}`)
	if failures > 0 {
		m.ConsecutiveFailures, m.FailingSince = failures, started.Add(-time.Hour)
		m.LastError = &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: started.Add(-time.Minute)}
	}
	m = runningAttempt(t, m, "u1", n, started)
	m.StatusMessage = "waiting for the export"
	return m
}

func TestSnooze(t *testing.T) {
	t.Parallel()
	now := morning // 10:00; the next occurrence is 15:00
	tests := []struct {
		name     string
		n        int
		failures int
		since    time.Time // snoozed_since before; zero: first snooze
		until    time.Time
		forD     time.Duration
		// want
		refreshAt time.Time
		since2    time.Time // snoozed_since after
		tooLong   bool
		plan      string // of the snoozed_too_long failure
	}{
		{name: "first snooze, until wins", n: 1, until: now.Add(20 * time.Minute),
			refreshAt: now.Add(20 * time.Minute), since2: now},
		{name: "for counts from the write", n: 1, forD: 20 * time.Minute,
			refreshAt: now.Add(20 * time.Minute), since2: now},
		{name: "the next occurrence wins", n: 1, until: occAfternoon.Add(time.Minute),
			since: now.Add(-time.Hour), refreshAt: occAfternoon, since2: now.Add(-time.Hour)},
		{name: "max_snooze wins", n: 1, until: now.Add(5 * time.Hour),
			since: now.Add(-3 * time.Hour), refreshAt: now.Add(3 * time.Hour), since2: now.Add(-3 * time.Hour)},
		{name: "no time of its own", n: 2, failures: 1, refreshAt: now.Add(5 * time.Hour), since2: now},
		{name: "attempt_no returns to its value before the start, streak kept", n: 3, failures: 2,
			until: now.Add(time.Minute), refreshAt: now.Add(time.Minute), since2: now},
		{name: "one ns before max_snooze: still a snooze", n: 1, since: now.Add(-6*time.Hour + time.Nanosecond),
			until: now.Add(time.Hour), refreshAt: now.Add(time.Nanosecond), since2: now.Add(-6*time.Hour + time.Nanosecond)},
		{name: "exactly max_snooze: a retryable failure", n: 1, since: now.Add(-6 * time.Hour), until: now.Add(time.Hour),
			tooLong: true, plan: refresh.DecisionRetry, since2: now.Add(-6 * time.Hour)},
		{name: "past max_snooze: its number decides, here exhausted", n: 4, failures: 3, since: now.Add(-7 * time.Hour),
			until: now.Add(time.Hour), tooLong: true, plan: refresh.DecisionDisable, since2: now.Add(-7 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := snoozeModel(t, tt.n, tt.failures, now.Add(-10*time.Minute))
			before.SnoozedSince = tt.since
			o := refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSnooze, Until: tt.until, For: refresh.Duration(tt.forD),
				Message: "the export is not there yet"}
			got, d := refresh.ApplyOutcome(before, o, now)
			requireTime(t, tt.since2, got.SnoozedSince)
			require.False(t, got.Running())
			require.Empty(t, got.StatusMessage)
			if tt.tooLong {
				require.Equal(t, refresh.EventFailure, d.Event)
				require.Equal(t, refresh.KindSnoozedTooLong, d.Kind)
				require.Equal(t, tt.plan, d.Plan)
				require.Equal(t, tt.n, d.AttemptNo)
				require.Equal(t, tt.failures+1, got.ConsecutiveFailures)
				require.Equal(t, refresh.KindSnoozedTooLong, got.LastError.Kind)
				return
			}
			want := before
			want.AttemptUID, want.StartedAt, want.DeadlineAt, want.StatusMessage = "", null, null, ""
			want.AttemptNo = tt.n - 1
			want.SnoozedSince = tt.since2
			want.RefreshAt = tt.refreshAt
			requireModel(t, want, got) // counters, streak and last_error unchanged
			require.Equal(t, refresh.EventSnooze, d.Event)
			require.Equal(t, "snooze", d.Rule)
			require.Equal(t, "u1", d.UID)
			require.Equal(t, tt.n, d.AttemptNo)
			require.Equal(t, "the export is not there yet", d.Message)
			require.NotEmpty(t, d.Why)
			if tt.forD > 0 {
				requireTime(t, now.Add(tt.forD), d.Until)
			} else {
				requireTime(t, tt.until, d.Until)
			}

			// The next start is attempt n again.
			started, sd := refresh.Start(got, "u2", got.RefreshAt)
			require.Equal(t, refresh.EventStart, sd.Event)
			require.Equal(t, tt.n, started.AttemptNo)
		})
	}
}

func TestSnoozeDefaultBound(t *testing.T) {
	t.Parallel()
	m := runningAttempt(t, transitionModel(t, `{"timeout": "1h"}`), "u1", 1, morning.Add(-time.Minute))
	m.SnoozedSince = morning.Add(-24 * time.Hour)
	_, d := refresh.Snooze(m, morning.Add(time.Hour), morning)
	require.Equal(t, refresh.KindSnoozedTooLong, d.Kind, "24h by default")
	m.SnoozedSince = morning.Add(-24*time.Hour + time.Second)
	got, d := refresh.Snooze(m, time.Time{}, morning)
	require.Equal(t, refresh.EventSnooze, d.Event)
	requireTime(t, morning.Add(time.Second), got.RefreshAt, "on demand: the end of max_snooze")
}

// TestSnoozedSinceResets checks the transitions that reset snoozed_since
// (success, wait_next, trigger, enable, cancel) and some that keep it.
func TestSnoozedSinceResets(t *testing.T) {
	t.Parallel()
	now := morning
	since := now.Add(-time.Hour)
	snoozed := func(t *testing.T) refresh.Model {
		m := snoozeModel(t, 1, 0, now.Add(-2*time.Hour))
		m, d := refresh.Snooze(m, now.Add(-time.Hour+time.Minute), since)
		require.Equal(t, refresh.EventSnooze, d.Event)
		return m
	}
	running := func(t *testing.T) refresh.Model {
		m := snoozed(t)
		m, _ = refresh.Start(m, "u2", now.Add(-10*time.Minute))
		return m
	}
	tests := []struct {
		name  string
		apply func(t *testing.T) refresh.Model
		reset bool
	}{
		{name: "success", reset: true, apply: func(t *testing.T) refresh.Model {
			m, _ := refresh.ApplyOutcome(running(t), refresh.Outcome{AttemptUID: "u2", Type: refresh.OutcomeSuccess}, now)
			return m
		}},
		{name: "unchanged success", reset: true, apply: func(t *testing.T) refresh.Model {
			m, _ := refresh.ApplyOutcome(running(t), refresh.Outcome{AttemptUID: "u2", Type: refresh.OutcomeSuccess, Unchanged: true}, now)
			return m
		}},
		{name: "wait_next", reset: true, apply: func(t *testing.T) refresh.Model {
			m := running(t)
			m.Policy = mustPolicy(t, `{`+parisSchedule+`, "timeout": "1h", "retry": {"delays": []}, "on_exhausted": "wait_next"}`)
			m, d := refresh.Failed(m, http503, now)
			require.Equal(t, refresh.DecisionWaitNext, d.Plan)
			return m
		}},
		{name: "trigger", reset: true, apply: func(t *testing.T) refresh.Model { m, _ := refresh.Trigger(snoozed(t), now); return m }},
		{name: "enable", reset: true, apply: func(t *testing.T) refresh.Model {
			m := running(t)
			m, d := refresh.Failed(m, refresh.Failure{Kind: "validation", Message: "bad", Retryable: true}, now)
			require.Equal(t, refresh.DecisionDisable, d.Plan)
			require.False(t, m.SnoozedSince.IsZero(), "a failure keeps it")
			m, _ = refresh.Enable(m, now)
			return m
		}},
		{name: "cancel", reset: true, apply: func(t *testing.T) refresh.Model { m, _ := refresh.Cancel(snoozed(t), now); return m }},
		{name: "a retried failure keeps it", apply: func(t *testing.T) refresh.Model {
			m, d := refresh.Failed(running(t), http503, now)
			require.Equal(t, refresh.DecisionRetry, d.Plan)
			return m
		}},
		{name: "a timeout keeps it", apply: func(t *testing.T) refresh.Model {
			m := running(t)
			m, _ = refresh.Timeout(m, m.DeadlineAt)
			return m
		}},
		{name: "pause keeps it", apply: func(t *testing.T) refresh.Model { m, _ := refresh.Pause(snoozed(t)); return m }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := tt.apply(t)
			if tt.reset {
				require.True(t, m.SnoozedSince.IsZero())
			} else {
				requireTime(t, since, m.SnoozedSince)
			}
		})
	}

	t.Run("cancel of a model only snoozed changes it", func(t *testing.T) {
		t.Parallel()
		m := snoozed(t)
		m.RefreshAt = occAfternoon // next(now), as a snooze that the schedule bounds plans
		require.Zero(t, m.AttemptNo)
		got, d := refresh.Cancel(m, now)
		require.False(t, d.Unchanged)
		require.True(t, got.SnoozedSince.IsZero())
		requireTime(t, occAfternoon, got.RefreshAt)
	})
}
