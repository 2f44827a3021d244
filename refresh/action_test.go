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
