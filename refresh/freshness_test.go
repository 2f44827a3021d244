package refresh_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// freshModel returns a model with the daily schedule, a timeout of 1h and
// a max_age of 2h, created at modelCreated.
func freshModel(t *testing.T) refresh.Model {
	t.Helper()
	return transitionModel(t, `{`+parisSchedule+`, "timeout": "1h", "max_age": "2h"}`)
}

func TestLoseFreshness(t *testing.T) {
	t.Parallel()
	lastSuccess := morning.Add(-3 * time.Hour)
	tests := []struct {
		name  string
		state func(m *refresh.Model)
		now   time.Time
		want  time.Time // overdue_since; zero: no freshness_lost
	}{
		{name: "never succeeded: from the creation", now: modelCreated.Add(2 * time.Hour), want: modelCreated.Add(2 * time.Hour)},
		{name: "never succeeded: one ns before", now: modelCreated.Add(2*time.Hour - time.Nanosecond)},
		{name: "from the last success, exactly at the instant", now: lastSuccess.Add(2 * time.Hour), want: lastSuccess.Add(2 * time.Hour),
			state: func(m *refresh.Model) { m.LastSuccessAt = lastSuccess }},
		{name: "one ns before the instant", now: lastSuccess.Add(2*time.Hour - time.Nanosecond),
			state: func(m *refresh.Model) { m.LastSuccessAt = lastSuccess }},
		{name: "a late tick keeps the instant", now: lastSuccess.Add(50 * time.Hour), want: lastSuccess.Add(2 * time.Hour),
			state: func(m *refresh.Model) { m.LastSuccessAt = lastSuccess }},
		{name: "an open episode is not opened again", now: morning,
			state: func(m *refresh.Model) { m.LastSuccessAt, m.OverdueSince = lastSuccess, lastSuccess.Add(2*time.Hour) }},
		{name: "no max_age", now: morning, state: func(m *refresh.Model) { m.Policy.MaxAge = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := freshModel(t)
			before.RefreshAt = occAfternoon
			if tt.state != nil {
				tt.state(&before)
			}
			got, d := refresh.LoseFreshness(before, tt.now)
			if tt.want.IsZero() {
				require.Equal(t, refresh.Decision{}, d)
				requireModel(t, before, got)
				return
			}
			want := before
			want.OverdueSince = tt.want
			requireModel(t, want, got)
			require.Equal(t, refresh.EventFreshnessLost, d.Event)
			require.Equal(t, "freshness.lost", d.Rule)
			requireTime(t, tt.want, d.OverdueSince)
			require.Equal(t, refresh.PhaseScheduled, d.Phase)
			require.NotEmpty(t, d.Why)
			require.True(t, got.Overdue(tt.now))
		})
	}
}

// TestPhase checks the precedence of a model's states: disabled > paused >
// running > snoozed > retrying > waiting_for_slot > scheduled, then idle.
func TestPhase(t *testing.T) {
	t.Parallel()
	disabled := func(m *refresh.Model) { m.DisabledAt, m.DisabledReason = morning, "gone" }
	paused := func(m *refresh.Model) { m.Paused = true }
	running := func(m *refresh.Model) { m.AttemptUID, m.DeadlineAt, m.RefreshAt = "u1", morning, morning }
	snoozed := func(m *refresh.Model) { m.SnoozedSince = morning }
	retrying := func(m *refresh.Model) { m.ConsecutiveFailures, m.FailingSince = 2, morning }
	waiting := func(m *refresh.Model) { m.WaitingForSlot = true }
	scheduled := func(m *refresh.Model) { m.RefreshAt = occAfternoon }
	debouncing := func(m *refresh.Model) { m.DebounceAt, m.DebounceSince = morning, morning }
	tests := []struct {
		want   string
		states []func(*refresh.Model)
	}{
		{refresh.PhaseDisabled, []func(*refresh.Model){disabled, paused, snoozed, retrying, debouncing}},
		{refresh.PhasePaused, []func(*refresh.Model){paused, running, snoozed, retrying, waiting}},
		{refresh.PhaseRunning, []func(*refresh.Model){running, snoozed, retrying}},
		{refresh.PhaseSnoozed, []func(*refresh.Model){snoozed, retrying, scheduled}},
		{refresh.PhaseRetrying, []func(*refresh.Model){retrying, waiting, scheduled}},
		{refresh.PhaseWaitingForSlot, []func(*refresh.Model){waiting, scheduled}},
		{refresh.PhaseScheduled, []func(*refresh.Model){scheduled}},
		{refresh.PhaseScheduled, []func(*refresh.Model){debouncing}},
		{refresh.PhaseIdle, nil},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			m := freshModel(t)
			for _, s := range tt.states {
				s(&m)
			}
			require.Equal(t, tt.want, m.Phase())
			_, d := refresh.LoseFreshness(m, morning.Add(24*time.Hour))
			require.Equal(t, refresh.EventFreshnessLost, d.Event)
			require.Equal(t, tt.want, d.Phase, "freshness_lost carries the state")
		})
	}
}

// TestFreshnessEpisode follows one episode: lost once at the instant,
// never again while it lasts (ticks, pause, edit, a restart that reads the
// model back), restored by the next success with its length.
func TestFreshnessEpisode(t *testing.T) {
	t.Parallel()
	m := freshModel(t)
	m.CreatedAt = time.Time{}
	m, _ = refresh.Create(m, false, occMorning.Add(-time.Hour)) // created 04:00, overdue at 06:00
	instant := occMorning.Add(time.Hour)
	requireTime(t, occMorning, m.DueAt(), "the start comes first")

	// The 05:00 run times out at 06:00 and retries at once; the freshness
	// instant comes at the same time.
	steps := refresh.TickAll(m, refresh.TickInput{UID: "u1"}, occMorning)
	require.Len(t, steps, 1)
	m = steps[0].Model
	requireTime(t, occMorning.Add(time.Hour), m.DueAt())
	steps = refresh.TickAll(m, refresh.TickInput{UID: "u2"}, instant)
	require.Equal(t, []string{refresh.EventTimeout, refresh.EventFreshnessLost, refresh.EventStart}, events(steps))
	require.Equal(t, refresh.PhaseRetrying, steps[1].Decision.Phase, "the state after the timeout")
	requireTime(t, instant, steps[1].Decision.OverdueSince)
	m = steps[2].Model
	requireTime(t, instant, m.OverdueSince)
	requireTime(t, m.DeadlineAt, m.DueAt(), "an open episode is no longer a reason to wake")

	// Nothing repeats while the episode lasts.
	m, _ = refresh.Pause(m)
	m, _ = refresh.Timeout(m, m.DeadlineAt)
	require.Empty(t, refresh.TickAll(m, refresh.TickInput{UID: "u3"}, m.DeadlineAt.Add(time.Hour)))
	require.True(t, m.DueAt().IsZero(), "paused, idle, episode open: nothing to wake for")
	m, _ = refresh.Resume(m, m.DeadlineAt.Add(2*time.Hour))
	edited := m.Policy
	edited.MaxAge = refresh.Duration(3 * time.Hour) // still overdue
	m, d := refresh.Edit(m, edited, instant.Add(3*time.Hour))
	requireTime(t, instant, m.OverdueSince, "the open episode keeps its instant")
	require.Empty(t, d.Event)
	data, err := json.Marshal(m)
	require.NoError(t, err)
	var restarted refresh.Model
	require.NoError(t, json.Unmarshal(data, &restarted))
	restarted.Policy = restarted.Policy.WithLimits(refresh.DefaultLimits())
	steps = refresh.TickAll(restarted, refresh.TickInput{UID: "u4"}, instant.Add(4*time.Hour))
	require.Equal(t, []string{refresh.EventStart}, events(steps), "after a restart, only the start")
	m = steps[0].Model

	// The success ends the episode.
	success := instant.Add(4*time.Hour + 10*time.Minute)
	m, d = refresh.ApplyOutcome(m, refresh.Outcome{AttemptUID: "u4", Type: refresh.OutcomeSuccess}, success)
	require.Equal(t, refresh.EventSuccess, d.Event)
	require.NotNil(t, d.Also)
	require.Equal(t, refresh.EventFreshnessRestored, d.Also.Event)
	requireTime(t, instant, d.Also.OverdueSince)
	require.Equal(t, 4*time.Hour+10*time.Minute, d.Also.OverdueFor)
	require.Nil(t, d.Also.Also)
	require.True(t, m.OverdueSince.IsZero())
	at, ok := m.OverdueAt()
	require.True(t, ok)
	requireTime(t, success.Add(3*time.Hour), at)
	require.False(t, m.Overdue(success))
}

func events(steps []refresh.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Decision.Event)
	}
	return out
}

func TestFreshnessRestored(t *testing.T) {
	t.Parallel()
	instant := morning.Add(-30 * time.Minute)
	tests := []struct {
		name      string
		unchanged bool
		open      bool
		arrived   time.Time // zero: now
		now       time.Time
		overdue   time.Duration
	}{
		{name: "a success ends the episode", open: true, now: morning, overdue: 30 * time.Minute},
		{name: "an unchanged success too", open: true, unchanged: true, now: morning, overdue: 30 * time.Minute},
		{name: "the episode ends at the arrival", open: true, arrived: morning, now: morning.Add(time.Minute), overdue: 30 * time.Minute},
		{name: "arrived before the instant: 0", open: true, arrived: instant.Add(-time.Minute), now: morning},
		{name: "no episode, nothing restored", now: morning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := runningAttempt(t, freshModel(t), "u1", 1, instant.Add(-10*time.Minute))
			m.LastChangedAt = modelCreated
			if tt.open {
				m.OverdueSince = instant
			}
			got, d := refresh.ApplyOutcome(m, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess,
				Unchanged: tt.unchanged, ArrivedAt: tt.arrived}, tt.now)
			require.Equal(t, refresh.EventSuccess, d.Event)
			require.Equal(t, tt.unchanged, d.DataUnchanged)
			require.True(t, got.OverdueSince.IsZero())
			arrival := tt.arrived
			if arrival.IsZero() {
				arrival = tt.now
			}
			requireTime(t, arrival, got.LastSuccessAt)
			if tt.unchanged {
				requireTime(t, modelCreated, got.LastChangedAt, "an unchanged success keeps last_changed_at")
			} else {
				requireTime(t, arrival, got.LastChangedAt)
			}
			if !tt.open {
				require.Nil(t, d.Also)
				return
			}
			require.NotNil(t, d.Also)
			require.Equal(t, refresh.EventFreshnessRestored, d.Also.Event)
			require.Equal(t, tt.overdue, d.Also.OverdueFor)
			requireTime(t, instant, d.Also.OverdueSince)
			require.Equal(t, d.At, d.Also.At, "both events at the arrival")
		})
	}
}

// TestEditClosesEpisode checks that an edit that makes the model no longer
// overdue closes its episode without an event, and that one that does not
// keeps it.
func TestEditClosesEpisode(t *testing.T) {
	t.Parallel()
	now := morning
	lastSuccess := now.Add(-3 * time.Hour) // overdue at now - 1h with max_age 2h
	tests := []struct {
		name   string
		maxAge time.Duration // 0: removed
		open   bool
	}{
		{name: "max_age removed", maxAge: 0},
		{name: "lengthened past now", maxAge: 4 * time.Hour},
		{name: "lengthened to exactly now: still overdue", maxAge: 3 * time.Hour, open: true},
		{name: "lengthened, still overdue", maxAge: 150 * time.Minute, open: true},
		{name: "shortened", maxAge: time.Hour, open: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := freshModel(t)
			m.LastSuccessAt, m.RefreshAt, m.OverdueSince = lastSuccess, occAfternoon, lastSuccess.Add(2*time.Hour)
			p := m.Policy
			p.MaxAge = refresh.Duration(tt.maxAge)
			got, d := refresh.Edit(m, p, now)
			require.Empty(t, d.Event, "an edit publishes nothing")
			require.Equal(t, p, got.Policy)
			if tt.open {
				requireTime(t, lastSuccess.Add(2*time.Hour), got.OverdueSince)
				return
			}
			require.True(t, got.OverdueSince.IsZero())
			require.Contains(t, d.Why, "closes silently")
			_, ld := refresh.LoseFreshness(got, now)
			require.Empty(t, ld.Event, "no longer overdue")
		})
	}
}

func TestFreshnessKey(t *testing.T) {
	t.Parallel()
	instant := time.Date(2026, 3, 2, 7, 0, 0, 0, time.FixedZone("CET", 3600))
	m := freshModel(t)
	m.ID = "bigtable-1"
	m.OverdueSince = instant
	lost := refresh.NewEvent(m, refresh.Decision{Event: refresh.EventFreshnessLost, OverdueSince: instant}, morning)
	require.Equal(t, "bigtable-1:freshness_lost:2026-03-02T06:00:00Z", lost.FreshnessKey())
	restored := refresh.NewEvent(m, refresh.Decision{Event: refresh.EventFreshnessRestored, OverdueSince: instant.Add(time.Millisecond)}, morning)
	require.Equal(t, "bigtable-1:freshness_restored:2026-03-02T06:00:00.001Z", restored.FreshnessKey())
	require.Empty(t, refresh.NewEvent(m, refresh.Decision{Event: refresh.EventStart}, morning).FreshnessKey())
}
