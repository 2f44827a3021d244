package queue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The events stream carries only the names of Options.Events: an event
// with two names may add one entry.
func TestPublishEventNames(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		names, err := refresh.ParseEventNames("-started,-succeeded")
		require.NoError(t, err)
		r, err := New(b.client, Options{Prefix: b.prefix, Consumer: "s1", Events: names, Clock: refresh.NewVirtualClock(t0), Logger: quiet})
		require.NoError(t, err)
		require.NoError(t, r.Publish(ctx, []refresh.Event{
			{At: t0, ModelID: "m1", Type: refresh.EventStart, AttemptNo: 1, AttemptUID: "u1"},
			{At: t0, ModelID: "m1", Type: refresh.EventSuccess, AttemptNo: 1, Recovered: true},
			{At: t0, ModelID: "m2", Type: refresh.EventSuccess, AttemptNo: 1},
			{At: t0, ModelID: "m2", Type: refresh.EventFailure, Decision: refresh.DecisionRetry, AttemptNo: 1},
		}))
		entries, err := b.client.XRange(ctx, b.keys.eventsKey(), "-", "+").Result()
		require.NoError(t, err)
		var types []string
		for _, e := range entries {
			types = append(types, e.Values["model_id"].(string)+" "+e.Values["type"].(string))
		}
		require.Equal(t, []string{"m1 recovered", "m2 failed", "m2 retry_scheduled"}, types)
		require.EqualValues(t, 3, r.Stats().Published)
	})
}
