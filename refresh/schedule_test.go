package refresh_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// fnv1a64 is FNV-1a 64 written out from its definition, to check the
// spread offset against.
func fnv1a64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func TestSpreadOffset(t *testing.T) {
	t.Parallel()
	const daily = `"schedule": "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY"`
	m := transitionModel(t, `{`+daily+`, "spread": "1h"}`)
	seen := map[time.Duration]bool{}
	for i := range 1000 {
		m.ID = fmt.Sprintf("model-%d", i)
		off := m.SpreadOffset()
		require.Equal(t, time.Duration(fnv1a64(m.ID)%3600)*time.Second, off, m.ID)
		require.GreaterOrEqual(t, off, time.Duration(0))
		require.Less(t, off, time.Hour)
		require.Zero(t, off%time.Second, "whole seconds")
		require.Equal(t, off, m.SpreadOffset(), "the same id, the same offset")
		seen[off] = true
	}
	require.Greater(t, len(seen), 800, "ids spread over the hour")

	m.Policy.Spread = 0
	require.Zero(t, m.SpreadOffset(), "no spread, no offset")
}

// spreadModel returns a model with the daily 06:00 UTC schedule, a spread
// of 1h, the given policy members, and an id whose offset lies between 10
// and 50 minutes; it returns the offset too.
func spreadModel(t *testing.T, members string) (refresh.Model, time.Duration) {
	t.Helper()
	policy := `{"schedule": "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY", "timeout": "1h", "spread": "1h"`
	if members != "" {
		policy += ", " + members
	}
	m := transitionModel(t, policy+`}`)
	for i := 0; ; i++ {
		m.ID = fmt.Sprintf("spread-%d", i)
		if off := m.SpreadOffset(); off > 10*time.Minute && off < 50*time.Minute {
			return m, off
		}
	}
}

// TestSpreadShiftsEveryOccurrence checks next(t) and first(t), and every
// transition that plans with them, against the shifted occurrences.
func TestSpreadShiftsEveryOccurrence(t *testing.T) {
	t.Parallel()
	m, off := spreadModel(t, "")
	day := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC) // an unshifted occurrence
	shiftedOcc := day.Add(off)
	tomorrow := shiftedOcc.Add(24 * time.Hour)

	tests := []struct {
		name        string
		t           time.Time
		next, first time.Time
	}{
		{name: "before the unshifted occurrence", t: day.Add(-time.Hour), next: shiftedOcc, first: shiftedOcc},
		{name: "at the unshifted occurrence, which is no occurrence", t: day, next: shiftedOcc, first: shiftedOcc},
		{name: "one ns before the shifted occurrence", t: shiftedOcc.Add(-time.Nanosecond), next: shiftedOcc, first: shiftedOcc},
		{name: "at the shifted occurrence", t: shiftedOcc, next: tomorrow, first: shiftedOcc},
		{name: "after it", t: shiftedOcc.Add(time.Second), next: tomorrow, first: tomorrow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next, ok := m.Next(tt.t)
			require.True(t, ok)
			requireTime(t, tt.next, next)
			first, ok := m.First(tt.t)
			require.True(t, ok)
			requireTime(t, tt.first, first)
		})
	}

	t.Run("create", func(t *testing.T) {
		t.Parallel()
		got, _ := refresh.Create(m, false, day.Add(-time.Hour))
		requireTime(t, shiftedOcc, got.RefreshAt)
	})
	t.Run("success", func(t *testing.T) {
		t.Parallel()
		run := runningAttempt(t, m, "u1", 1, shiftedOcc)
		got, _ := refresh.Success(run, shiftedOcc.Add(time.Minute))
		requireTime(t, tomorrow, got.RefreshAt)
	})
	t.Run("a retry aligns with the shifted occurrence", func(t *testing.T) {
		t.Parallel()
		// Failing 30m before the shifted occurrence: the retry after 0s
		// plus the timeout of 1h runs past it.
		now := shiftedOcc.Add(-30 * time.Minute)
		run := runningAttempt(t, m, "u1", 1, now.Add(-time.Minute))
		got, d := refresh.Failed(run, refresh.Failure{Kind: "x", Message: "boom", Retryable: true}, now)
		require.Equal(t, refresh.DecisionRetryAligned, d.Plan)
		requireTime(t, shiftedOcc, got.RefreshAt)
	})
	t.Run("a retry that ends before the shifted occurrence does not align", func(t *testing.T) {
		t.Parallel()
		// 70m before the shifted occurrence: the retry (0s) and its hour
		// end before it, though they run past the unshifted one.
		now := shiftedOcc.Add(-70 * time.Minute)
		run := runningAttempt(t, m, "u1", 1, now.Add(-time.Minute))
		got, d := refresh.Failed(run, refresh.Failure{Kind: "x", Message: "boom", Retryable: true}, now)
		require.Equal(t, refresh.DecisionRetry, d.Plan)
		requireTime(t, now, got.RefreshAt)
	})
	t.Run("cancel and enable", func(t *testing.T) {
		t.Parallel()
		run := runningAttempt(t, m, "u1", 1, day)
		got, _ := refresh.Cancel(run, day.Add(time.Minute))
		requireTime(t, shiftedOcc, got.RefreshAt)
		dis := m
		dis.DisabledAt, dis.DisabledReason = day, "gone"
		got, _ = refresh.Enable(dis, day.Add(time.Minute))
		requireTime(t, shiftedOcc, got.RefreshAt)
	})
}
