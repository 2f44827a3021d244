package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/storetest"
)

func TestStoreEventNames(t *testing.T) {
	t.Parallel()
	storetest.RunEventNames(t, func(t *testing.T) storetest.EventsStore { return setup(t).store })
}

// Cycles of models through the real scheduler and consumer write outbox
// rows for the names subscribed only: none at all without the per-cycle
// names, but for the success of a model with a dependent, whose upstream
// trigger the publisher then brings. The history is the same either way.
func TestOutboxRowsOfCycles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names string
		rows  int // outbox rows written; -1: at least one per pass and the dependent's
	}{
		{"all", -1},
		{"-started,-succeeded", 1},
		{"none", 1},
		{"failed,disabled", 1},
	} {
		t.Run(tc.names, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			names, err := refresh.ParseEventNames(tc.names)
			require.NoError(t, err)
			b.store.SetEvents(names)

			const n = 40
			var ms []refresh.Model
			for i := range n {
				ms = append(ms, model(fmt.Sprintf("m%02d", i), t0))
			}
			dep := model("dep", t0)
			dep.RefreshAt, dep.Upstreams = t0.AddDate(1, 0, 0), []string{"m00"}
			put(t, b.store, append(ms, dep)...)

			clock := refresh.NewVirtualClock(t0)
			q := memory.NewQueue(clock)
			s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: b.store, Queue: q, Clock: clock, BatchSize: 2 * n})
			require.NoError(t, err)
			tick, err := s.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, n, tick.Started)
			for _, j := range q.Take("tables", 2*n) {
				q.Deliver(refresh.Outcome{ModelID: j.ModelID, AttemptUID: j.AttemptUID, Type: refresh.OutcomeSuccess})
			}
			c, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: b.store, Outcomes: q, Clock: clock, BatchSize: 2 * n})
			require.NoError(t, err)
			res, err := c.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, n, res.Applied)

			var rows, successes int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox),
				(SELECT count(*) FROM attempts WHERE outcome = 'success')`).Scan(&rows, &successes))
			require.Equal(t, n, successes, "the history is written whatever the names")
			if tc.rows < 0 {
				require.GreaterOrEqual(t, rows, 2, "a row per pass")
			} else {
				require.Equal(t, tc.rows, rows, "only the success of m00, which has a dependent")
			}

			svc := &refresh.Service{Store: b.store, Clock: clock}
			triggers := 0
			p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: q, Clock: clock,
				PropagateFunc: func(ctx context.Context, events []refresh.Event) (int, error) {
					n, err := svc.Propagate(ctx, events)
					triggers += n
					return n, err
				}})
			require.NoError(t, err)
			for {
				res, err := p.RunOnce(ctx)
				require.NoError(t, err)
				if res.Published == 0 {
					break
				}
			}
			require.Equal(t, 1, triggers, "m00's success triggers its dependent")
			got, err := b.store.Get(ctx, "dep")
			require.NoError(t, err)
			require.False(t, got.DueAt().After(clock.Now()), "dep is due at once")
		})
	}
}
