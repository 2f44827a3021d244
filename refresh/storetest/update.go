package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// disabledModel is model id, disabled by its third failure an hour before
// t0, with nothing planned.
func disabledModel(id string) refresh.Model {
	m := model(id, time.Time{})
	m.AttemptNo, m.ConsecutiveFailures, m.FailingSince = 3, 3, t0.Add(-2*time.Hour)
	m.LastError = &refresh.LastError{Kind: "validation", Message: "bad input_url", At: t0.Add(-time.Hour)}
	m.DisabledAt, m.DisabledReason = t0.Add(-time.Hour), "Refresh disabled after 3 failed attempt(s)."
	return m
}

// testUpdateReEnables checks docs/transitions.md's "Changing a model"
// through a refresh.Service on the store: a PUT or PATCH that changes the
// definition of a disabled model re-enables it as a trigger, in the
// transaction of the write, with its audit entry and its events (update,
// then trigger); one that changes nothing leaves it disabled and writes
// no event and no audit entry.
func testUpdateReEnables(t *testing.T, s refresh.Store) {
	clock := refresh.NewVirtualClock(t0)
	svc := &refresh.Service{Store: s, Clock: clock, Limits: refresh.DefaultLimits()}
	ctx := refresh.WithAudit(context.Background(), refresh.AuditInfo{Actor: "ops"})
	audit, _ := s.(refresh.AuditLog)
	entries := func(id string) []refresh.AuditEntry {
		if audit == nil {
			return nil
		}
		list, err := audit.Audit(context.Background(), id, 0, 100)
		require.NoError(t, err)
		return list
	}
	m := disabledModel("import-9")
	put(t, s, m)
	policy, err := json.Marshal(m.Policy)
	require.NoError(t, err)
	same := refresh.PutRequest{ID: m.ID, Queue: m.Queue, Payload: json.RawMessage(`{ "input_url" : "https://example.com/a.csv" }`), Policy: policy}

	// A PUT and a PATCH that change nothing leave it disabled.
	clock.Advance(time.Minute)
	got, created, err := svc.Put(ctx, same)
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, got.Disabled())
	_, err = svc.Patch(ctx, refresh.PatchRequest{ID: m.ID, Queue: json.RawMessage(`"tables"`), Policy: json.RawMessage(`{"timeout": "1h"}`)})
	require.NoError(t, err)
	stored, err := s.Get(context.Background(), m.ID)
	require.NoError(t, err)
	require.Equal(t, normal(t, m), normal(t, stored), "unchanged")
	require.Empty(t, takeAll(t, s), "no event")
	require.Empty(t, entries(m.ID), "no audit entry")

	// A PUT that replaces the payload re-enables it: the next attempt
	// starts now.
	clock.Advance(time.Minute)
	now := clock.Now()
	fixed := same
	fixed.Payload = json.RawMessage(`{"input_url": "https://example.com/b.csv"}`)
	got, _, err = svc.Put(ctx, fixed)
	require.NoError(t, err)
	requireReEnabled(t, s, m.ID, now, got)
	var n int
	_, err = s.ClaimDue(context.Background(), now, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		n = len(due)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, 1, n, "due now")
	if audit != nil {
		list := entries(m.ID)
		require.Len(t, list, 1)
		require.Equal(t, refresh.AuditReplace, list[0].Action)
		require.True(t, list[0].Trigger, "the update, then the trigger")
		require.Len(t, list[0].Changes, 1)
		require.Equal(t, "payload", list[0].Changes[0].Field)
	}

	// A PATCH of the policy does the same.
	other := disabledModel("import-10")
	put(t, s, other)
	clock.Advance(time.Minute)
	now = clock.Now()
	got, err = svc.Patch(ctx, refresh.PatchRequest{ID: other.ID, Policy: json.RawMessage(`{"timeout": "30m"}`)})
	require.NoError(t, err)
	requireReEnabled(t, s, other.ID, now, got)
	require.Equal(t, refresh.Duration(30*time.Minute), got.Policy.Timeout)
}

// requireReEnabled checks that model id, as the write returned it (got)
// and as stored, is re-enabled and triggered at now, and that the write
// published update, then trigger.
func requireReEnabled(t *testing.T, s refresh.Store, id string, now time.Time, got refresh.Model) {
	t.Helper()
	stored, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	for _, m := range []refresh.Model{got, stored} {
		require.False(t, m.Disabled())
		require.Empty(t, m.DisabledReason)
		require.Zero(t, m.AttemptNo)
		require.Zero(t, m.ConsecutiveFailures)
		require.True(t, m.FailingSince.IsZero())
		require.True(t, m.RefreshAt.Equal(now), "refresh_at %s, want %s", m.RefreshAt, now)
	}
	require.Equal(t, normal(t, got), normal(t, stored))
	var types []string
	for _, e := range takeAll(t, s) {
		require.Equal(t, id, e.ModelID)
		require.True(t, e.At.Equal(now))
		require.False(t, e.Disabled)
		types = append(types, e.Type)
	}
	require.Equal(t, []string{refresh.EventUpdate, refresh.EventTrigger}, types)
}
