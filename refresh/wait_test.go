package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The rules of a wait for a limit (slots.go): what WaitForSlot records,
// once per wait, the wait_too_long past max_lateness, and every field
// cleared when the wait ends.

var (
	apiRate  = refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(time.Minute), Burst: 2}
	acmeSlot = refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2}
)

// lateWaitPolicy has a catch-up window of 1h; 08:00 UTC is no occurrence
// of it, so a start planned then is never skipped.
const lateWaitPolicy = `{` + parisSchedule + `, "timeout": "1h", "max_lateness": "1h"}`

// waitingModel returns a model due since refresh_at that waits for
// limit l as WaitForSlot leaves it.
func waitingModel(t *testing.T, refreshAt time.Time, in refresh.TickInput) refresh.Model {
	t.Helper()
	m := transitionModel(t, lateWaitPolicy)
	m.RefreshAt = refreshAt
	m, d := refresh.WaitForSlot(m, in, refreshAt)
	require.Equal(t, refresh.EventWait, d.Event)
	return m
}

func TestWaitForSlot(t *testing.T) {
	t.Parallel()
	now := morning
	until := now.Add(7 * time.Second)
	rateIn := refresh.TickInput{FullLimit: apiRate, Until: until, Tenant: "acme-"}
	tests := []struct {
		name  string
		state func(t *testing.T) refresh.Model
		in    refresh.TickInput
		event string
		want  func(m *refresh.Model) // the model after, from the one before
		why   string
	}{
		{name: "a rate limit: waiting_until and waiting_tenant", in: rateIn, event: refresh.EventWait,
			state: func(t *testing.T) refresh.Model { m := transitionModel(t, lateWaitPolicy); m.RefreshAt = now; return m },
			want: func(m *refresh.Model) {
				m.WaitingForSlot, m.WaitingLimit, m.WaitingUntil, m.WaitingTenant = true, "rate_key:api.example.com", until, "acme-"
			},
			why: `due since 2026-03-02T10:00:00Z, but rate_key "api.example.com" (max_starts 10 per 1m, burst 2) admits no start before 2026-03-02T10:00:07Z: the start waits`},
		{name: "a concurrency limit: no waiting_until", in: refresh.TickInput{FullLimit: acmeSlot, Tenant: "acme-"}, event: refresh.EventWait,
			state: func(t *testing.T) refresh.Model { m := transitionModel(t, lateWaitPolicy); m.RefreshAt = now; return m },
			want: func(m *refresh.Model) {
				m.WaitingForSlot, m.WaitingLimit, m.WaitingTenant = true, "prefix:acme-", "acme-"
			},
			why: `due since 2026-03-02T10:00:00Z, but prefix "acme-" (max_running 2) has no free slot: the start waits`},
		{name: "once per wait: a later until changes nothing",
			in:    refresh.TickInput{FullLimit: apiRate, Until: until.Add(time.Minute), Tenant: "beta-"},
			state: func(t *testing.T) refresh.Model { return waitingModel(t, now, rateIn) }},
		{name: "another limit: a new wait, its own until and tenant", in: refresh.TickInput{FullLimit: acmeSlot}, event: refresh.EventWait,
			state: func(t *testing.T) refresh.Model {
				m := waitingModel(t, now.Add(-2*time.Hour), rateIn)
				m, d := refresh.WaitTooLong(m, apiRate, now)
				require.Equal(t, refresh.EventWaitTooLong, d.Event)
				return m
			},
			want: func(m *refresh.Model) {
				m.WaitingLimit, m.WaitingUntil, m.WaitingTenant, m.WaitTooLong = "prefix:acme-", time.Time{}, "", false
			},
			why: `due since 2026-03-02T08:00:00Z, but prefix "acme-" (max_running 2) has no free slot: the start waits`},
		{name: "no start due: no wait", in: rateIn,
			state: func(t *testing.T) refresh.Model {
				m := transitionModel(t, lateWaitPolicy)
				m.RefreshAt = now.Add(time.Second)
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.state(t)
			after, d := refresh.WaitForSlot(before, tt.in, now)
			require.Equal(t, tt.event, d.Event)
			want := before
			if tt.want != nil {
				tt.want(&want)
			}
			requireModel(t, want, after)
			requireTime(t, want.WaitingUntil, after.WaitingUntil)
			if d.Event == "" {
				return
			}
			require.Equal(t, "slot.wait", d.Rule)
			require.Equal(t, tt.in.FullLimit.String(), d.Reason)
			require.Equal(t, tt.why, d.Why)
			require.Equal(t, before.AttemptNo, d.AttemptNo, "a wait is no attempt")
			require.False(t, after.DueAt().After(now), "a waiting model stays due")
		})
	}
}

func TestWaitTooLong(t *testing.T) {
	t.Parallel()
	now := morning
	rateIn := refresh.TickInput{FullLimit: apiRate, Until: now.Add(time.Second)}
	tests := []struct {
		name  string
		state func(t *testing.T) refresh.Model
		event string
	}{
		{name: "waited longer than max_lateness", event: refresh.EventWaitTooLong,
			state: func(t *testing.T) refresh.Model { return waitingModel(t, now.Add(-time.Hour-time.Second), rateIn) }},
		{name: "waited exactly max_lateness: not yet",
			state: func(t *testing.T) refresh.Model { return waitingModel(t, now.Add(-time.Hour), rateIn) }},
		{name: "once per wait",
			state: func(t *testing.T) refresh.Model {
				m, d := refresh.WaitTooLong(waitingModel(t, now.Add(-2*time.Hour), rateIn), apiRate, now.Add(-time.Minute))
				require.Equal(t, refresh.EventWaitTooLong, d.Event)
				return m
			}},
		{name: "no max_lateness",
			state: func(t *testing.T) refresh.Model {
				m := waitingModel(t, now.Add(-48*time.Hour), rateIn)
				m.Policy.MaxLateness = 0
				return m
			}},
		{name: "not waiting",
			state: func(t *testing.T) refresh.Model {
				m := transitionModel(t, lateWaitPolicy)
				m.RefreshAt = now.Add(-2 * time.Hour)
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.state(t)
			after, d := refresh.WaitTooLong(before, apiRate, now)
			require.Equal(t, tt.event, d.Event)
			if d.Event == "" {
				requireModel(t, before, after)
				return
			}
			want := before
			want.WaitTooLong = true
			requireModel(t, want, after)
			require.Equal(t, "slot.wait_too_long", d.Rule)
			require.Equal(t, apiRate.String(), d.Reason)
			require.Contains(t, d.Why, "more than max_lateness 1h")
			require.True(t, after.WaitingForSlot, "the model still waits")
		})
	}
}

// TestTickRateWait checks what Tick does with a rate limit that holds the
// start back: the wait, with wait_too_long at once when already late,
// and the start once the limit admits it.
func TestTickRateWait(t *testing.T) {
	t.Parallel()
	now := morning
	in := refresh.TickInput{UID: "u9", FullLimit: apiRate, Until: now.Add(3 * time.Second), Tenant: "acme-"}
	due := func(at time.Time) refresh.Model {
		m := transitionModel(t, lateWaitPolicy)
		m.RefreshAt = at
		return m
	}
	steps := refresh.TickAll(due(now), in, now)
	require.Equal(t, []string{refresh.EventWait}, events(steps))
	requireTime(t, now.Add(3*time.Second), steps[0].Model.WaitingUntil)
	require.Equal(t, "acme-", steps[0].Model.WaitingTenant)

	steps = refresh.TickAll(due(now.Add(-2*time.Hour)), in, now)
	require.Equal(t, []string{refresh.EventWait, refresh.EventWaitTooLong}, events(steps))
	require.True(t, steps[1].Model.WaitTooLong)
	require.Empty(t, refresh.TickAll(steps[1].Model, in, now.Add(time.Second)), "nothing more while it waits")

	// Admitted, it starts, and the wait's fields are cleared.
	steps = refresh.TickAll(steps[1].Model, refresh.TickInput{UID: "u9"}, now.Add(3*time.Second))
	require.Equal(t, []string{refresh.EventStart}, events(steps))
	requireWaitCleared(t, steps[0].Model)
}

// requireWaitCleared checks that every field of a wait is cleared.
func requireWaitCleared(t *testing.T, m refresh.Model) {
	t.Helper()
	require.False(t, m.WaitingForSlot)
	require.Empty(t, m.WaitingLimit)
	require.True(t, m.WaitingUntil.IsZero(), "waiting_until %s", m.WaitingUntil)
	require.Empty(t, m.WaitingTenant)
	require.False(t, m.WaitTooLong)
}

// TestRateWaitEnds checks that each transition that ends a wait clears
// every field of it.
func TestRateWaitEnds(t *testing.T) {
	t.Parallel()
	now := morning
	waiting := func(t *testing.T) refresh.Model {
		m := waitingModel(t, now.Add(-2*time.Hour), refresh.TickInput{FullLimit: apiRate, Until: now.Add(time.Second), Tenant: "acme-"})
		m, d := refresh.WaitTooLong(m, apiRate, now)
		require.Equal(t, refresh.EventWaitTooLong, d.Event)
		return m
	}
	tests := []struct {
		name  string
		apply func(t *testing.T, m refresh.Model) refresh.Model
	}{
		{name: "start", apply: func(t *testing.T, m refresh.Model) refresh.Model { m, _ = refresh.Start(m, "u1", now); return m }},
		{name: "pause", apply: func(t *testing.T, m refresh.Model) refresh.Model { m, _ = refresh.Pause(m); return m }},
		{name: "cancel", apply: func(t *testing.T, m refresh.Model) refresh.Model { m, _ = refresh.Cancel(m, now); return m }},
		{name: "an edit that plans later", apply: func(t *testing.T, m refresh.Model) refresh.Model {
			m, _ = refresh.Edit(m, m.Policy, now) // planned at 15:00
			return m
		}},
		{name: "a skip", apply: func(t *testing.T, m refresh.Model) refresh.Model {
			m.RefreshAt = occMorning // a scheduled occurrence 5h ago
			m, d := refresh.Skip(m, now)
			require.Equal(t, refresh.EventSkip, d.Event)
			return m
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireWaitCleared(t, tt.apply(t, waiting(t)))
		})
	}
}
