package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// policyCount returns how many policies are stored.
func policyCount(t *testing.T, b bundle) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM policies`).Scan(&n))
	return n
}

// twoPolicies stores models a and c with two policies, c's a longer
// timeout than a's, and returns them.
func twoPolicies(t *testing.T, b bundle) (a, c refresh.Model) {
	t.Helper()
	a, c = model("a", t0), model("c", t0)
	c.Policy.Timeout *= 2
	put(t, b.store, a, c)
	return a, c
}

// pruneWaiting starts a pass of PrunePolicies on s at now and returns
// once it waits for the advisory lock of the policies; the channel gets
// its error.
func pruneWaiting(t *testing.T, b bundle, s *postgres.Store, now time.Time) <-chan error {
	t.Helper()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := s.PrunePolicies(ctx, now)
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'advisory'
			AND objid::bigint = hashtext(current_schema() || '.freshen_policies')::bigint & 4294967295`).Scan(&n))
		return n > 0
	}, 10*time.Second, 10*time.Millisecond, "the pass waits for the lock")
	return done
}

// A policy no model uses is deleted by the first pass at least
// PolicyGrace after the pass that found it unused; one used again in
// between is kept, and the models read the same policies throughout.
func TestPrunePolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	a, c := twoPolicies(t, b)
	require.Equal(t, 2, policyCount(t, b))

	prune := func(at time.Duration) int {
		t.Helper()
		n, err := b.store.PrunePolicies(ctx, t0.Add(at))
		require.NoError(t, err)
		return n
	}
	require.Zero(t, prune(0), "every policy is used")

	old := c.Policy
	c.Policy = a.Policy
	put(t, b.store, c)
	require.Zero(t, prune(time.Minute), "unused: marked")
	require.Zero(t, prune(time.Minute+postgres.PolicyGrace-time.Second), "within the grace")
	require.Equal(t, 2, policyCount(t, b))

	c.Policy = old
	put(t, b.store, c) // used again: its mark is cleared
	require.Zero(t, prune(10*time.Minute))
	got, err := b.store.Get(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, old, got.Policy)

	c.Policy = a.Policy
	put(t, b.store, c)
	require.Zero(t, prune(20*time.Minute), "unused again: marked")
	require.Equal(t, 1, prune(20*time.Minute+postgres.PolicyGrace))
	require.Equal(t, 1, policyCount(t, b))

	c.Policy = old // stored anew
	put(t, b.store, c)
	require.Equal(t, 2, policyCount(t, b))
	for _, s := range []*postgres.Store{b.store, postgres.New(b.pool)} {
		got, err := s.Get(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, old, got.Policy)
	}
}

// A write that names a policy holds off the deletion until it commits: a
// policy marked unused that a transaction gives to a model again is not
// deleted under it.
func TestPrunePoliciesWaitsForWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	a, c := twoPolicies(t, b)
	var old int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT policy_id FROM models WHERE id = 'c'`).Scan(&old))
	c.Policy = a.Policy
	put(t, b.store, c)
	_, err := b.store.PrunePolicies(ctx, t0)
	require.NoError(t, err)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var again int64
	require.NoError(t, tx.QueryRow(ctx, `UPDATE models SET policy_id = freshen_policy_id((SELECT policy FROM policies WHERE id = $1))
		WHERE id = 'c' RETURNING policy_id`, old).Scan(&again))
	require.Equal(t, old, again)

	done := pruneWaiting(t, b, b.store, t0.Add(time.Hour))
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)
	require.Equal(t, 2, policyCount(t, b), "the policy given again is kept")
	got, err := b.store.Get(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, 2*a.Policy.Timeout, got.Policy.Timeout)
}

// The retention loop deletes the policies no model uses, at its first
// pass after the grace.
func TestPrunerDeletesUnusedPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	a, c := twoPolicies(t, b)
	c.Policy = a.Policy
	put(t, b.store, c)

	clock := refresh.NewVirtualClock(t0)
	p, err := refresh.NewPruner(refresh.PrunerConfig{Store: b.store, Clock: clock, Policies: b.store})
	require.NoError(t, err)
	res, err := p.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Policies)
	clock.Advance(postgres.PolicyGrace)
	res, err = p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Policies)
	require.Equal(t, 1, policyCount(t, b))
}

// A pass scans models only when a policy may have been left unused since
// the last one (a model deleted, a policy changed or added) and while
// policies are marked; writes that leave every policy in use cost the
// passes after them no scan.
func TestPrunePoliciesScansAfterChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	st := &statements{keep: true}
	s := tracedStore(t, b, st)
	a, c := twoPolicies(t, b)
	scans := func() int {
		st.mu.Lock()
		defer st.mu.Unlock()
		n := 0
		for _, sql := range st.text {
			if strings.Contains(sql, "SELECT DISTINCT policy_id") {
				n++
			}
		}
		return n
	}
	prune := func(at time.Duration) (deleted int, scanned bool) {
		t.Helper()
		before := scans()
		n, err := s.PrunePolicies(ctx, t0.Add(at))
		require.NoError(t, err)
		return n, scans() > before
	}

	_, scanned := prune(0)
	require.True(t, scanned, "the first pass of a store")
	_, scanned = prune(time.Minute)
	require.False(t, scanned, "nothing written since")

	d := model("d", t0)
	d.Policy = a.Policy
	put(t, b.store, d)
	a.State.RefreshAt = t0.Add(time.Hour)
	put(t, b.store, a)
	_, scanned = prune(2 * time.Minute)
	require.False(t, scanned, "a model created with a stored policy, another edited")

	c.Policy = a.Policy
	put(t, b.store, c)
	n, scanned := prune(3 * time.Minute)
	require.True(t, scanned, "a policy changed")
	require.Zero(t, n, "marked")
	n, scanned = prune(3*time.Minute + postgres.PolicyGrace)
	require.True(t, scanned, "a policy marked")
	require.Equal(t, 1, n)
	_, scanned = prune(10 * time.Minute)
	require.False(t, scanned)

	_, err := b.pool.Exec(ctx, `DELETE FROM models WHERE id = 'd'`)
	require.NoError(t, err)
	_, scanned = prune(11 * time.Minute)
	require.True(t, scanned, "a model deleted")
	_, scanned = prune(12 * time.Minute)
	require.False(t, scanned)

	e := model("e", t0)
	e.Policy.Timeout *= 3
	put(t, b.store, e)
	_, scanned = prune(13 * time.Minute)
	require.True(t, scanned, "a policy added")
	require.Equal(t, 2, policyCount(t, b))

	// A deletion not yet committed holds off the pass, which then sees
	// it: the policy it leaves unused is marked.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `DELETE FROM models WHERE id = 'e'`)
	require.NoError(t, err)
	before := scans()
	done := pruneWaiting(t, b, s, t0.Add(14*time.Minute))
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)
	require.Greater(t, scans(), before)
	var marked int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM policies WHERE orphaned_at IS NOT NULL`).Scan(&marked))
	require.Equal(t, 1, marked, "the policy of e")
}
