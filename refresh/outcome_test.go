package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestCheckOutcome(t *testing.T) {
	t.Parallel()
	now := morning
	snooze := func(until time.Time, d time.Duration) refresh.Outcome {
		return refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSnooze, Until: until, For: refresh.Duration(d)}
	}
	tests := []struct {
		name string
		o    refresh.Outcome
		want string
	}{
		{name: "snooze until", o: snooze(now.Add(time.Second), 0)},
		{name: "snooze for", o: snooze(time.Time{}, time.Minute)},
		{name: "snooze until one ns after the arrival", o: snooze(now.Add(time.Nanosecond), 0)},
		{name: "snooze until the arrival", o: snooze(now, 0), want: "until: must be after 2026-03-02T10:00:00Z, got 2026-03-02T10:00:00Z"},
		{name: "snooze until the past", o: snooze(now.Add(-time.Hour), 0), want: "until: must be after 2026-03-02T10:00:00Z, got 2026-03-02T09:00:00Z"},
		{name: "snooze for a negative time", o: snooze(time.Time{}, -time.Minute), want: "for: must be > 0, got -1m"},
		{name: "snooze with both", o: snooze(now.Add(time.Hour), time.Minute), want: "until: a snooze sets until or for, not both"},
		{name: "snooze with neither", o: snooze(time.Time{}, 0), want: "until: a snooze needs until or for"},
		{name: "snooze unchanged", o: refresh.Outcome{Type: refresh.OutcomeSnooze, For: refresh.Duration(time.Minute), Unchanged: true},
			want: "unchanged: only a success outcome takes it"},
		{name: "success unchanged", o: refresh.Outcome{Type: refresh.OutcomeSuccess, Unchanged: true}},
		{name: "success", o: refresh.Outcome{Type: refresh.OutcomeSuccess}},
		{name: "failure unchanged", o: refresh.Outcome{Type: refresh.OutcomeFailure, Unchanged: true},
			want: "unchanged: only a success outcome takes it"},
		{name: "success with until", o: refresh.Outcome{Type: refresh.OutcomeSuccess, Until: now.Add(time.Hour)},
			want: "until: only a snooze outcome takes it"},
		{name: "status with for", o: refresh.Outcome{Type: refresh.OutcomeStatus, For: refresh.Duration(time.Hour)},
			want: "for: only a snooze outcome takes it"},
		{name: "failure", o: refresh.Outcome{Type: refresh.OutcomeFailure, Kind: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refresh.CheckOutcome(tt.o, now))
		})
	}
}

// TestUnchangedSuccess checks that an unchanged success is a success in
// every rule but last_changed_at.
func TestUnchangedSuccess(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	changed := morning.Add(-48 * time.Hour)
	for _, never := range []bool{false, true} {
		before := transitionModel(t, policy)
		before.ConsecutiveFailures, before.FailingSince = 2, morning.Add(-time.Hour)
		if !never {
			before.LastSuccessAt, before.LastChangedAt = changed.Add(24*time.Hour), changed
		}
		before = runningAttempt(t, before, "u1", 3, morning.Add(-time.Minute))
		plain, pd := refresh.ApplyOutcome(before, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}, morning)
		got, d := refresh.ApplyOutcome(before, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess, Unchanged: true}, morning)

		requireTime(t, morning, plain.LastChangedAt)
		requireTime(t, before.LastChangedAt, got.LastChangedAt, "kept (never succeeded: %v)", never)
		want := plain
		want.LastChangedAt = before.LastChangedAt
		requireModel(t, want, got)
		require.True(t, d.DataUnchanged)
		require.False(t, pd.DataUnchanged)
		require.Equal(t, "success unchanged", d.Rule)
		require.Equal(t, refresh.EventSuccess, d.Event)

		s, sd := refresh.SuccessUnchanged(before, morning)
		requireModel(t, got, s)
		require.True(t, sd.DataUnchanged)
	}
}
