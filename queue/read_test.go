package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// Depths and RecentEvents read what Push and Publish write.
func TestDepthsAndRecentEvents(t *testing.T) {
	t.Parallel()
	b := newMini(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	q := b.newRedis(t, "reader", refresh.NewVirtualClock(at))
	events := []refresh.Event{
		{At: at, ModelID: "m1", Type: refresh.EventStart, AttemptNo: 1},
		// A failure is two entries of the stream: failed, then disabled.
		{At: at.Add(time.Minute), ModelID: "m1", Type: refresh.EventFailure, Decision: refresh.DecisionDisable, AttemptNo: 1, Reason: "off"},
		{At: at.Add(2 * time.Minute), ModelID: "m2", Type: refresh.EventStart, AttemptNo: 1},
	}
	require.NoError(t, q.Publish(ctx, events))
	require.NoError(t, q.Push(ctx, []refresh.Job{{ModelID: "m2", AttemptUID: "u", Queue: "tables"}, {ModelID: "m3", AttemptUID: "v", Queue: "tables"}}))

	got, err := q.RecentEvents(ctx, 10)
	require.NoError(t, err)
	require.Len(t, got, 3, "each event once")
	for i, e := range got {
		want := events[len(events)-1-i] // newest first
		require.Equal(t, want.ModelID, e.ModelID)
		require.Equal(t, want.Type, e.Type)
		require.Equal(t, want.Decision, e.Decision)
		require.True(t, want.At.Equal(e.At))
	}
	got, err = q.RecentEvents(ctx, 1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "m2", got[0].ModelID)

	depths, err := q.Depths(ctx, []string{"tables", "empty"})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"tables": 2, "empty": 0}, depths)
}
