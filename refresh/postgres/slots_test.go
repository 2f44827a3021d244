package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Schedulers of several instances, passing at once with one model each,
// start no more attempts than a limit allows: the limit's lock makes each
// count the starts the others committed.
func TestSlotsAcrossInstances(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const models, max = 12, 3
	var ms []refresh.Model
	for i := range models {
		m := model(fmt.Sprintf("m%02d", i), t0)
		m.Queue = "exports"
		ms = append(ms, m)
	}
	put(t, b.store, ms...)
	_, err := b.store.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: max}, false)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make([]error, models)
	for i := range models {
		// Each instance has its own store on the schema: its own cache.
		store := postgres.New(b.pool)
		s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: memory.NewQueue(refresh.NewVirtualClock(t0)),
			Clock: refresh.NewVirtualClock(t0), BatchSize: 1})
		require.NoError(t, err)
		wg.Go(func() { _, errs[i] = s.RunOnce(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	running, waiting := 0, 0
	for _, m := range ms {
		got, err := b.store.Get(ctx, m.ID)
		require.NoError(t, err)
		if got.Running() {
			running++
		}
		if got.WaitingForSlot {
			waiting++
		}
	}
	require.Equal(t, max, running)
	require.Equal(t, models-max, waiting)
}
