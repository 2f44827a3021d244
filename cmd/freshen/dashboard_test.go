package main

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// The dashboard reads what queue.Redis writes, by the keys of WIRE.md.
func TestWireReader(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	for _, prefix := range []string{"", "acme"} {
		q, err := queue.New(client, queue.Options{Prefix: prefix, Consumer: "test", Clock: refresh.NewVirtualClock(at)})
		require.NoError(t, err)
		events := []refresh.Event{
			{At: at, ModelID: "m1", Type: refresh.EventStart, AttemptNo: 1},
			// A failure is two entries of the stream: failed, then disabled.
			{At: at.Add(time.Minute), ModelID: "m1", Type: refresh.EventFailure, Decision: refresh.DecisionDisable, AttemptNo: 1, Reason: "off"},
			{At: at.Add(2 * time.Minute), ModelID: "m2", Type: refresh.EventStart, AttemptNo: 1},
		}
		require.NoError(t, q.Publish(ctx, events))
		require.NoError(t, q.Push(ctx, []refresh.Job{{ModelID: "m2", AttemptUID: "u", Queue: "tables"}, {ModelID: "m3", AttemptUID: "v", Queue: "tables"}}))

		w := wireReader{client: client, prefix: prefix}
		got, err := w.RecentEvents(ctx, 10)
		require.NoError(t, err)
		require.Len(t, got, 3, "prefix %q: each event once", prefix)
		for i, e := range got {
			want := events[len(events)-1-i] // newest first
			require.Equal(t, want.ModelID, e.ModelID)
			require.Equal(t, want.Type, e.Type)
			require.Equal(t, want.Decision, e.Decision)
			require.True(t, want.At.Equal(e.At))
		}
		got, err = w.RecentEvents(ctx, 1)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "m2", got[0].ModelID)

		depths, err := w.Depths(ctx, []string{"tables", "empty"})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"tables": 2, "empty": 0}, depths, "prefix %q", prefix)
	}
}
