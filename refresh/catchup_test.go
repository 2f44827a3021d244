package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// lateModel returns a model with the daily schedule (05:00 and 15:00 UTC),
// a timeout of 1h, max_lateness 1h and the given retry object.
func lateModel(t *testing.T, retry string) refresh.Model {
	t.Helper()
	if retry == "" {
		retry = `{"delays": ["0s", "1m", "5m"]}`
	}
	return transitionModel(t, `{`+parisSchedule+`, "timeout": "1h", "max_lateness": "1h", "retry": `+retry+`}`)
}

// TestSkip checks which late starts the catch-up window skips: scheduled
// occurrences only (aligned retries, starts after resume or a slot wait
// included), never a trigger, a retry delay or a snooze time.
func TestSkip(t *testing.T) {
	t.Parallel()
	yesterday := occMorning.Add(-24 * time.Hour)
	tests := []struct {
		name  string
		model func(t *testing.T) refresh.Model
		now   time.Time
		// want; missed 0: the start is not skipped
		missed    int
		refreshAt time.Time
	}{
		{name: "exactly max_lateness late: starts", now: occMorning.Add(time.Hour),
			model: func(t *testing.T) refresh.Model { m := lateModel(t, ""); m.RefreshAt = occMorning; return m }},
		{name: "one ns more: skipped", now: occMorning.Add(time.Hour + time.Nanosecond), missed: 1, refreshAt: occAfternoon,
			model: func(t *testing.T) refresh.Model { m := lateModel(t, ""); m.RefreshAt = occMorning; return m }},
		{name: "missed occurrences are counted", now: morning, missed: 3, refreshAt: occAfternoon,
			model: func(t *testing.T) refresh.Model { m := lateModel(t, ""); m.RefreshAt = yesterday; return m }},
		{name: "an occurrence at the edge of the window is counted", now: occAfternoon.Add(time.Hour + time.Nanosecond),
			missed: 4, refreshAt: occTomorrow,
			model: func(t *testing.T) refresh.Model { m := lateModel(t, ""); m.RefreshAt = yesterday; return m }},
		{name: "the run stands for the latest occurrence, still in the window", now: occMorning.Add(10 * time.Minute),
			model: func(t *testing.T) refresh.Model { m := lateModel(t, ""); m.RefreshAt = yesterday; return m }},
		{name: "an aligned retry is skipped, attempt_no and streak kept", now: occAfternoon.Add(2 * time.Hour), missed: 1,
			refreshAt: occTomorrow, model: func(t *testing.T) refresh.Model {
				m := runningAttempt(t, lateModel(t, ""), "u1", 2, occAfternoon.Add(-50*time.Minute))
				m, d := refresh.Failed(m, http503, occAfternoon.Add(-40*time.Minute))
				require.Equal(t, refresh.DecisionRetryAligned, d.Plan)
				return m
			}},
		{name: "a retry delay is never skipped", now: morning.Add(5 * time.Hour),
			model: func(t *testing.T) refresh.Model {
				m := runningAttempt(t, lateModel(t, ""), "u1", 2, morning.Add(-10*time.Minute))
				m, d := refresh.Failed(m, http503, morning)
				require.Equal(t, refresh.DecisionRetry, d.Plan)
				return m
			}},
		{name: "a retry delay that falls on an occurrence is not skipped", now: occAfternoon.Add(5 * time.Hour),
			model: func(t *testing.T) refresh.Model {
				m := runningAttempt(t, lateModel(t, `{"delays": ["0s", "1m", "5m"], "align": false}`), "u1", 3, occAfternoon.Add(-15*time.Minute))
				m, d := refresh.Failed(m, http503, occAfternoon.Add(-5*time.Minute))
				require.Equal(t, refresh.DecisionRetry, d.Plan)
				requireTime(t, occAfternoon, m.RefreshAt)
				require.True(t, m.OffSchedule)
				return m
			}},
		{name: "a trigger is never skipped", now: morning.Add(5 * time.Hour),
			model: func(t *testing.T) refresh.Model {
				m, _ := refresh.Pause(lateModel(t, ""))
				m, _ = refresh.Trigger(m, morning)
				m, _ = refresh.Resume(m, morning.Add(5*time.Hour))
				return m
			}},
		{name: "a trigger at an occurrence is not skipped", now: occMorning.Add(5 * time.Hour),
			model: func(t *testing.T) refresh.Model {
				m, _ := refresh.Pause(lateModel(t, ""))
				m, _ = refresh.Trigger(m, occMorning)
				require.True(t, m.OffSchedule)
				m, _ = refresh.Resume(m, occMorning.Add(5*time.Hour))
				return m
			}},
		{name: "a snooze planned at the next occurrence is not skipped", now: occAfternoon.Add(5 * time.Hour),
			model: func(t *testing.T) refresh.Model {
				m := runningAttempt(t, lateModel(t, ""), "u1", 1, morning.Add(-10*time.Minute))
				m, d := refresh.Snooze(m, occTomorrow, morning)
				require.Equal(t, refresh.EventSnooze, d.Event)
				requireTime(t, occAfternoon, m.RefreshAt)
				return m
			}},
		{name: "after resume", now: occAfternoon.Add(90 * time.Minute), missed: 2, refreshAt: occTomorrow,
			model: func(t *testing.T) refresh.Model {
				m := lateModel(t, "")
				m.RefreshAt = occMorning
				m, _ = refresh.Pause(m)
				m, _ = refresh.Resume(m, occAfternoon.Add(90*time.Minute))
				return m
			}},
		{name: "after a slot wait, which ends", now: occMorning.Add(2 * time.Hour), missed: 1, refreshAt: occAfternoon,
			model: func(t *testing.T) refresh.Model {
				m := lateModel(t, "")
				m.RefreshAt = occMorning
				m, d := refresh.WaitForSlot(m, refresh.TickInput{FullLimit: refresh.Limit{Kind: refresh.LimitQueue, Key: "default", MaxRunning: 1}}, occMorning)
				require.Equal(t, refresh.EventWait, d.Event)
				return m
			}},
		{name: "the schedule has ended: nothing planned", now: occAfternoon, missed: 1, refreshAt: null,
			model: func(t *testing.T) refresh.Model {
				m := transitionModel(t, `{"schedule": "DTSTART:20260302T050000Z\nRRULE:FREQ=DAILY;COUNT=1", "max_lateness": "1h"}`)
				m.RefreshAt = occMorning
				return m
			}},
		{name: "without max_lateness: starts", now: morning.Add(48 * time.Hour),
			model: func(t *testing.T) refresh.Model {
				m := transitionModel(t, `{`+parisSchedule+`}`)
				m.RefreshAt = yesterday
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.model(t)
			require.True(t, before.CanStart(tt.now))
			got, d := refresh.Skip(before, tt.now)
			steps := refresh.TickAll(before, refresh.TickInput{UID: "u9"}, tt.now)
			require.NotEmpty(t, steps)
			if tt.missed == 0 {
				require.Equal(t, refresh.Decision{}, d)
				requireModel(t, before, got)
				require.Equal(t, []string{refresh.EventStart}, events(steps))
				return
			}
			require.Equal(t, []string{refresh.EventSkip}, events(steps), "skipped, then nothing more is due")
			require.Equal(t, refresh.EventSkip, d.Event)
			require.Equal(t, "catch_up.skip", d.Rule)
			require.Equal(t, tt.missed, d.Missed)
			require.NotEmpty(t, d.Why)
			want := before
			want.RefreshAt, want.WaitingForSlot, want.WaitingLimit, want.OffSchedule = tt.refreshAt, false, "", false
			requireModel(t, want, got) // attempt_no, counters and streak kept
			require.Equal(t, before.AttemptNo, d.AttemptNo)
			requireModel(t, got, steps[0].Model)
		})
	}
}

func TestSkipMissedIsBounded(t *testing.T) {
	t.Parallel()
	m := transitionModel(t, `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY", "timeout": "30s", "max_lateness": "30s"}`)
	m.RefreshAt = morning.Add(-48 * time.Hour)
	got, d := refresh.Skip(m, morning.Add(40*time.Second))
	require.Equal(t, refresh.EventSkip, d.Event)
	require.Equal(t, refresh.MaxMissedCount, d.Missed)
	require.Contains(t, d.Why, "at least 1000 occurrence(s) missed")
	requireTime(t, morning.Add(time.Minute), got.RefreshAt)

	m.RefreshAt = morning.Add(-3 * time.Minute)
	_, d = refresh.Skip(m, morning.Add(40*time.Second))
	require.Equal(t, 4, d.Missed, "09:57, 09:58, 09:59, 10:00")
	require.NotContains(t, d.Why, "at least")
}

// TestSkipWithSpread checks that lateness counts from the shifted
// occurrence.
func TestSkipWithSpread(t *testing.T) {
	t.Parallel()
	m, off := spreadModel(t, `"max_lateness": "5m"`)
	occ := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC).Add(off)
	m.RefreshAt = occ
	_, d := refresh.Skip(m, occ.Add(5*time.Minute))
	require.Empty(t, d.Event, "5m after the shifted occurrence, though more after the unshifted one")
	_, d = refresh.Skip(m, occ.Add(5*time.Minute+time.Second))
	require.Equal(t, refresh.EventSkip, d.Event)
	require.Equal(t, 1, d.Missed)
}
