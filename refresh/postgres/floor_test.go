package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// claimAll claims the models due at now and moves each a day ahead, as a
// start would move it out of the way, and returns their ids.
func claimAll(t *testing.T, s *postgres.Store, now time.Time) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimDue(context.Background(), now, 100, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		var b refresh.Batch
		for _, m := range due {
			ids = append(ids, m.ID)
			m.RefreshAt = now.Add(24 * time.Hour)
			b.Changes = append(b.Changes, refresh.Change{Model: m})
		}
		return b, nil
	})
	require.NoError(t, err)
	return ids
}

// After a pass that claimed all it found, the next passes scan the due
// models from its start less a second: a model made due long before by someone
// other than the store waits for the pass that scans from the start, every
// 10s; one the store writes due before the bound is claimed by the next
// pass.
func TestClaimSkipsTheClaimedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	put(t, b.store, model("a", t0), model("b", t0.Add(time.Hour)), model("c", t0.Add(time.Hour)))
	require.Equal(t, []string{"a"}, claimAll(t, b.store, t0.Add(time.Second)))

	// Behind the store's back: b is due an hour before the bound.
	_, err := b.pool.Exec(ctx, `UPDATE models SET refresh_at = $1 WHERE id = 'b'`, t0.Add(-time.Hour))
	require.NoError(t, err)
	require.Empty(t, claimAll(t, b.store, t0.Add(2*time.Second)), "b lies below the bound")
	next, ok, err := b.store.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Hour), next, "NextDue looks from the bound too")

	// Through the store: c is due an hour before the bound.
	c := model("c", t0.Add(-time.Hour))
	put(t, b.store, c)
	require.Equal(t, []string{"b", "c"}, claimAll(t, b.store, t0.Add(3*time.Second)), "the write dropped the bound")

	put(t, b.store, model("d", t0.Add(4*time.Second)))
	require.Equal(t, []string{"d"}, claimAll(t, b.store, t0.Add(5*time.Second)))
	_, err = b.pool.Exec(ctx, `UPDATE models SET refresh_at = $1 WHERE id = 'a'`, t0.Add(-time.Hour))
	require.NoError(t, err)
	require.Empty(t, claimAll(t, b.store, t0.Add(6*time.Second)))
	require.Equal(t, []string{"a"}, claimAll(t, b.store, t0.Add(16*time.Second)), "every 10s a pass scans from the start")
}
