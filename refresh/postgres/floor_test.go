package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// claimAll claims up to limit models due at now and moves each a day
// ahead, as a start moves it out of the way, and returns their ids.
func claimAll(t *testing.T, s *postgres.Store, now time.Time, limit int) []string {
	t.Helper()
	var ids []string
	_, err := s.ClaimDue(context.Background(), now, limit, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
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

// at is t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// flooredStore returns a store whose claim floor is t0+1s: model a, due
// at t0, claimed by a pass at t0+2s.
func flooredStore(t *testing.T) bundle {
	t.Helper()
	b := setup(t)
	put(t, b.store, model("a", t0))
	require.Equal(t, []string{"a"}, claimAll(t, b.store, at(2*time.Second), 100))
	require.Equal(t, at(time.Second), postgres.Floor(b.store), "the pass's start less a second")
	return b
}

// The passes scan the due models from the claim floor up: a second before
// the start of the last pass, or lower where its check found a due model
// that no claim took (held by another transaction, past a full batch). A
// model the store writes due below the floor lowers it; one made due below
// it behind the store's back waits for the pass that scans from the start,
// every 10s.
func TestClaimFloorSkipsTheClaimedHead(t *testing.T) {
	t.Parallel()
	b := flooredStore(t)
	ctx := context.Background()

	// d is held by another transaction during a pass: the pass passes
	// over it, and its check keeps the floor at d's due time.
	put(t, b.store, model("d", at(1500*time.Millisecond)), model("e", at(1600*time.Millisecond)))
	holder, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT 1 FROM models WHERE id = 'd' FOR UPDATE`)
	require.NoError(t, err)
	require.Equal(t, []string{"e"}, claimAll(t, b.store, at(4*time.Second), 100))
	require.Equal(t, at(1500*time.Millisecond), postgres.Floor(b.store), "d's due time")
	require.Empty(t, claimAll(t, b.store, at(4500*time.Millisecond), 100))
	require.Equal(t, at(1500*time.Millisecond), postgres.Floor(b.store), "a pass that claims nothing checks too, and finds d")
	require.NoError(t, holder.Rollback(ctx))
	require.Equal(t, []string{"d"}, claimAll(t, b.store, at(5*time.Second), 100), "d, free again, lies above the floor")

	// Past a full batch.
	put(t, b.store, model("f", at(4100*time.Millisecond)), model("g", at(4200*time.Millisecond)), model("h", at(4300*time.Millisecond)))
	require.Equal(t, []string{"f", "g"}, claimAll(t, b.store, at(7*time.Second), 2))
	require.Equal(t, at(4300*time.Millisecond), postgres.Floor(b.store), "h's due time")
	require.Equal(t, []string{"h"}, claimAll(t, b.store, at(8*time.Second), 100))

	// Behind the store's back: b is due two hours before the floor.
	put(t, b.store, model("b", at(time.Hour)))
	_, err = b.pool.Exec(ctx, `UPDATE models SET refresh_at = $1 WHERE id = 'b'`, at(-2*time.Hour))
	require.NoError(t, err)
	require.Empty(t, claimAll(t, b.store, at(9*time.Second), 100), "b lies below the floor")
	require.Equal(t, at(8*time.Second), postgres.Floor(b.store), "a pass that claims nothing raises the floor too")
	put(t, b.store, model("later", at(time.Hour)))
	next, ok, err := b.store.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, at(time.Hour), next, "NextDue looks from the floor too")

	// Through the store: c is due an hour before the floor, which drops
	// to c and not to b.
	put(t, b.store, model("c", at(-time.Hour)))
	require.Equal(t, []string{"c"}, claimAll(t, b.store, at(10*time.Second), 100))
	// 10s after the floor was first set, a pass scans from the start.
	require.Equal(t, []string{"b"}, claimAll(t, b.store, at(11*time.Second), 100))
}

// Another store's write due below the floor lowers it through the
// notification, once Listen hears it.
func TestClaimFloorLoweredByNotification(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listener := postgres.New(b.pool)
	l, err := listener.Listen(ctx)
	require.NoError(t, err)
	select {
	case <-l.Heard:
	case <-time.After(10 * time.Second):
		t.Fatal("Listen's own notification did not arrive")
	}
	put(t, b.store, model("a", t0))
	require.Equal(t, []string{"a"}, claimAll(t, listener, t0.Add(2*time.Second), 100))

	put(t, b.store, model("c", t0.Add(-time.Hour))) // through the other store
	// Two notifications come: the bare schema, then the one with c's due
	// time; the listener's pass finds c once it has read the second.
	var got []string
	for try := 0; len(got) == 0; try++ {
		require.Less(t, try, 3, "c not claimed after the notifications")
		select {
		case <-l.Wake:
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
		}
		got = claimAll(t, listener, t0.Add(3*time.Second), 100)
	}
	require.Equal(t, []string{"c"}, got)
	cancel()
	for range l.Wake {
	}
}

// The pass that scans from the start and claims models due below the
// floor (here inserted with SQL, behind the store's back) lowers it: the
// next passes claim the rest of them without waiting for another such
// pass.
func TestClaimFloorFindsACrowdBelowIt(t *testing.T) {
	t.Parallel()
	b := flooredStore(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `INSERT INTO models (id, queue, payload, created_at, refresh_at)
		SELECT 'crowd-' || i, 'tables', '{}', $1, $1 FROM generate_series(1, 5) AS i`, at(-time.Hour))
	require.NoError(t, err)
	require.Empty(t, claimAll(t, b.store, at(3*time.Second), 2), "below the floor")
	// 10s after the floor was set, a pass scans from the start.
	require.Equal(t, []string{"crowd-1", "crowd-2"}, claimAll(t, b.store, at(11*time.Second), 2))
	require.Equal(t, at(-time.Hour), postgres.Floor(b.store))
	require.Equal(t, []string{"crowd-3", "crowd-4"}, claimAll(t, b.store, at(12*time.Second), 2))
	require.Equal(t, []string{"crowd-5"}, claimAll(t, b.store, at(13*time.Second), 2))
	require.Equal(t, at(12*time.Second), postgres.Floor(b.store))
}
