package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// parsedPolicy returns the policy that input parses to.
func parsedPolicy(t *testing.T, input string) refresh.Policy {
	t.Helper()
	p, err := refresh.ParsePolicy([]byte(input), refresh.Limits{})
	require.NoError(t, err)
	return p
}

// Each distinct policy is stored once; every model reads back the policy
// it was written with, from a store that has it cached and from one that
// has not, and an edit that changes a policy moves the model to the new
// one's row.
func TestPoliciesStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	inputs := []string{
		`{}`,
		`{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris", "timeout": "1h"}`,
		`{"retry": {"delays": [], "non_retryable": []}}`,
		`{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 2, "max_retries": 3}, "align": false, "retry_on": ["http_503"]}}`,
	}
	var models []refresh.Model
	for i := range 12 {
		m := model(fmt.Sprintf("p-%02d", i), t0)
		m.Policy = parsedPolicy(t, inputs[i%len(inputs)])
		models = append(models, m)
	}
	put(t, b.store, models...)
	var rows int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM policies`).Scan(&rows))
	require.Equal(t, len(inputs), rows)

	fresh := postgres.New(b.pool) // nothing cached
	for _, s := range []*postgres.Store{b.store, fresh, fresh} {
		for _, want := range models {
			got, err := s.Get(ctx, want.ID)
			require.NoError(t, err)
			require.Equal(t, want.Policy, got.Policy, want.ID)
			require.Equal(t, want.Policy.Retry.Delays == nil, got.Policy.Retry.Delays == nil, "nil and empty delays differ: %s", want.ID)
			require.Equal(t, want.Policy.Retry.NonRetryable == nil, got.Policy.Retry.NonRetryable == nil, want.ID)
		}
	}
	require.Equal(t, len(inputs), postgres.CachedPolicies(fresh))

	edited := models[0]
	edited.Policy = parsedPolicy(t, `{"timeout": "7m"}`)
	put(t, b.store, edited)
	got, err := fresh.Get(ctx, edited.ID)
	require.NoError(t, err)
	require.Equal(t, edited.Policy, got.Policy)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM policies`).Scan(&rows))
	require.Equal(t, len(inputs)+1, rows)
}

// A caller that changes the policy it read changes neither the cache nor
// what others read.
func TestPolicyCacheCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	m := model("copies", t0)
	m.Policy = parsedPolicy(t, `{"retry": {"backoff": {"strategy": "fixed", "base": "1m", "max_retries": 2}, "align": true, "retry_on": ["a"], "non_retryable": ["b"]}}`)
	d := model("delays", t0)
	d.Policy = parsedPolicy(t, `{"retry": {"delays": ["1m", "5m"]}}`)
	put(t, b.store, m, d)

	first, err := b.store.Get(ctx, m.ID)
	require.NoError(t, err)
	want, err := b.store.Get(ctx, m.ID)
	require.NoError(t, err)
	p := &first.Policy
	p.Retry.Backoff.Base = 0
	*p.Retry.Align = false
	p.Retry.RetryOn[0] = "changed"
	p.Retry.NonRetryable[0] = "changed"
	p.Retry.Delays = append(p.Retry.Delays, 1)
	again, err := b.store.Get(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, want.Policy, again.Policy)

	got, err := b.store.Get(ctx, d.ID)
	require.NoError(t, err)
	got.Policy.Retry.Delays[0] = 0
	got, err = b.store.Get(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, refresh.Duration(60e9), got.Policy.Retry.Delays[0])
}

// A stored policy that does not decode fails the read that meets it and
// is not cached; the cache stays
// within its bound.
func TestPolicyCacheErrorsAndBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.pool.Exec(ctx, `INSERT INTO models (id, queue, policy_id, created_at)
		VALUES ('bad', 'q', (SELECT freshen_policy_id('{"timeout": 5}')), $1)`, t0)
	require.NoError(t, err)
	_, err = b.store.Get(ctx, "bad")
	require.ErrorContains(t, err, `decode policy`)
	require.Zero(t, postgres.CachedPolicies(b.store), "a policy that does not decode is not remembered")

	var models []refresh.Model
	for i := range postgres.MaxCachedPolicies + 10 {
		m := model(fmt.Sprintf("t-%04d", i), t0)
		m.Policy = parsedPolicy(t, fmt.Sprintf(`{"timeout": "%ds"}`, i+1))
		models = append(models, m)
	}
	put(t, b.store, models...)
	list, err := b.store.List(ctx, refresh.Filter{Prefix: "t-", Limit: len(models)})
	require.NoError(t, err)
	require.Len(t, list, len(models))
	for i, m := range list {
		require.Equal(t, models[i].Policy, m.Policy, m.ID)
	}
	require.LessOrEqual(t, postgres.CachedPolicies(b.store), postgres.MaxCachedPolicies)
}
