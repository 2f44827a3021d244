package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestActionWhyNextRun checks how the decision of enable, resume and
// cancel says when the model runs next: "next run <time>" in UTC, or
// "nothing planned" (never a JSON null).
func TestActionWhyNextRun(t *testing.T) {
	t.Parallel()
	now := morning
	const hourly = `{"schedule": "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY", "timeout": "30m"}`
	next := now.Add(time.Hour).UTC().Format(time.RFC3339)
	pending := func(m refresh.Model) refresh.Model {
		m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.RefreshAt = 1, 1, now.Add(-time.Minute), now.Add(time.Minute)
		return m
	}
	disabled := func(m refresh.Model) refresh.Model {
		m.DisabledAt, m.DisabledReason = now.Add(-time.Hour), "gone"
		return m
	}
	paused := func(m refresh.Model) refresh.Model {
		m.Paused, m.RefreshAt = true, now.Add(time.Hour)
		return m
	}
	tests := []struct {
		name   string
		policy string
		state  func(refresh.Model) refresh.Model
		act    func(refresh.Model) (refresh.Model, refresh.Decision)
		why    string
	}{
		{"cancel, on demand", `{}`, pending, func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Cancel(m, now) },
			"cancelled; nothing planned"},
		{"cancel, scheduled", hourly, pending, func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Cancel(m, now) },
			"cancelled; next run " + next},
		{"enable, on demand", `{}`, disabled, func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Enable(m, now) },
			"enabled; nothing planned"},
		{"resume, scheduled", hourly, paused, func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Resume(m, now) },
			"resumed; next run " + next},
		{"resume, on demand", `{}`, func(m refresh.Model) refresh.Model { m.Paused = true; return m },
			func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Resume(m, now) }, "resumed; nothing planned"},
		{"resume, running", hourly, func(m refresh.Model) refresh.Model {
			m = runningAttempt(t, m, "u1", 1, now.Add(-time.Minute))
			m.Paused = true
			return m
		}, func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Resume(m, now) },
			"resumed; the running attempt goes on, deadline " + now.Add(29*time.Minute).UTC().Format(time.RFC3339)},
		{"success, on demand", `{}`, func(m refresh.Model) refresh.Model { return runningAttempt(t, m, "u1", 1, now.Add(-time.Minute)) },
			func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Success(m, now) }, "succeeded; nothing planned"},
		{"success, scheduled", hourly, func(m refresh.Model) refresh.Model { return runningAttempt(t, m, "u1", 1, now.Add(-time.Minute)) },
			func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Success(m, now) }, "succeeded; next run " + next},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, d := tt.act(tt.state(transitionModel(t, tt.policy)))
			require.False(t, d.Unchanged)
			require.Equal(t, tt.why, d.Why)
		})
	}
}
