package refresh_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestServicePutValidates(t *testing.T) {
	b := setup(t)
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{
		ID: "bad/id", Queue: "", Payload: json.RawMessage(`{`),
		Policy: json.RawMessage(`{"timeout": "-1s", "retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`),
	})
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v), "got %v", err)
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
	var fields []string
	for _, f := range v.Fields {
		fields = append(fields, f.Field)
	}
	require.Contains(t, fields, "id")
	require.Contains(t, fields, "payload")
	require.Contains(t, fields, "policy.timeout")
	require.Contains(t, fields, "policy.retry.backoff.multiplier")
	require.Contains(t, err.Error(), "policy.retry.backoff.multiplier: must be >= 1, got 0.5")
	_, err = b.store.Get(context.Background(), "bad/id")
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "nothing written")
}

func TestServicePutCreatesThenReplaces(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	m, created, err := b.svc.Put(ctx, refresh.PutRequest{ID: "r", Queue: "q", Policy: json.RawMessage(hourly)})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "q", m.Queue)
	require.True(t, m.CreatedAt.Equal(t0))
	require.True(t, m.RefreshAt.Equal(time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)), "first(now) of the hourly rule")
	require.Equal(t, []string{"create:r"}, types(b.events(t)))

	// Replacing an idle model re-plans it under the new schedule and keeps its state.
	b.clock.Advance(time.Minute)
	m, created, err = b.svc.Put(ctx, refresh.PutRequest{ID: "r", Queue: "q", Policy: json.RawMessage(`{"schedule": "DTSTART:20260302T000000Z\nRRULE:FREQ=DAILY;BYHOUR=12", "timeout": "5m"}`)})
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, m.RefreshAt.Equal(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)))
	require.True(t, m.CreatedAt.Equal(t0))
	require.Empty(t, b.events(t), "a replace without trigger is not a lifecycle event")

	// Replacing with trigger refreshes at once.
	m = b.put(t, "r", `{"timeout": "5m"}`, true)
	require.True(t, m.RefreshAt.Equal(b.clock.Now()))
	require.Equal(t, []string{"trigger:r"}, types(b.events(t)))
	got, err := b.store.Get(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "", got.Policy.Schedule)
}

func TestServicePutKeepsARetryRound(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "r", `{"timeout": "10m", "retry": {"delays": ["30m"]}}`, true)
	s := b.scheduler(t, refresh.SchedulerConfig{})
	_, err := s.RunOnce(ctx)
	require.NoError(t, err)
	job := b.queue.Take("q", 1)[0]
	b.queue.Deliver(refresh.Outcome{ModelID: "r", AttemptUID: job.AttemptUID, Type: refresh.OutcomeFailure, Kind: "x"})
	_, err = b.consumer(t, b.store).RunOnce(ctx)
	require.NoError(t, err)
	m, err := b.store.Get(ctx, "r")
	require.NoError(t, err)
	retryAt := m.RefreshAt
	require.True(t, retryAt.Equal(t0.Add(30*time.Minute)))

	m = b.put(t, "r", `{"timeout": "20m", "retry": {"delays": ["30m"]}}`, false)
	require.True(t, m.RefreshAt.Equal(retryAt), "the pending retry stays planned")
	require.Equal(t, 1, m.AttemptNo)
}

func TestServiceAct(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	_, _, err := b.svc.Act(ctx, "nope", refresh.ActionTrigger)
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))
	b.put(t, "m", hourly, false)
	_, _, err = b.svc.Act(ctx, "m", "explode")
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))

	woken := 0
	b.svc.WakeFunc = func() { woken++ }
	for _, action := range []string{refresh.ActionPause, refresh.ActionTrigger, refresh.ActionResume, refresh.ActionCancel, refresh.ActionEnable, refresh.ActionPause, refresh.ActionPause} {
		m, d, err := b.svc.Act(ctx, "m", action)
		require.NoError(t, err)
		require.Equal(t, action, d.Event)
		require.NotEmpty(t, d.Why)
		got, err := b.store.Get(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, m.State, got.State, "the returned model is the one written")
	}
	require.Equal(t, 5, woken, "no-op actions wake nothing")
	require.Equal(t, []string{"create:m", "pause:m", "trigger:m", "resume:m", "cancel:m", "pause:m"}, types(b.events(t)),
		"enable on an enabled model and pause on a paused one publish nothing")
}
