package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/refresh"
)

// maxCachedPolicies bounds a policyCache; when it is full it starts again
// empty.
const maxCachedPolicies = 1024

// policyCache holds the policies read from the table policies, decoded,
// by id: a row of policies never changes (migration 015), models mostly
// share a few policies, and decoding a policy was most of the CPU cost of
// reading a model. A model read carries its policy's id; the policies
// not cached yet are read after the models, in one statement (fill).
// Every caller receives a copy of its own, so changing one changes
// neither the cache nor what others receive. It is safe for concurrent
// use; the zero value is empty.
type policyCache struct {
	mu sync.Mutex
	m  map[int64]refresh.Policy
	// limits are bound to every policy read (refresh.Policy.WithLimits).
	limits refresh.Limits
}

// setLimits binds the policies read from now on to lim.
func (c *policyCache) setLimits(lim refresh.Limits) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limits = lim
	c.m = nil
}

// get returns a copy of the policy with id, if it is cached.
func (c *policyCache) get(id int64) (refresh.Policy, bool) {
	c.mu.Lock()
	p, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return refresh.Policy{}, false
	}
	return clonePolicy(p), true
}

// pendingPolicy is a model read whose policy was not cached: models[index]
// has policy id.
type pendingPolicy struct {
	index int
	id    int64
}

// querier is what fill reads the policies with: a pool, a connection or a
// transaction, whose rows of models have been read to the end.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// fill reads the policies of pending from q, caches them and sets them on
// models.
func (c *policyCache) fill(ctx context.Context, q querier, models []refresh.Model, pending []pendingPolicy) error {
	if len(pending) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(pending))
	for _, p := range pending {
		if !slices.Contains(ids, p.id) {
			ids = append(ids, p.id)
		}
	}
	rows, err := q.Query(ctx, `SELECT id, policy FROM policies WHERE id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("read %d policies: %w", len(ids), err)
	}
	read := make(map[int64]refresh.Policy, len(ids))
	var (
		id   int64
		data []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &data}, func() error {
		var p refresh.Policy
		if err := json.Unmarshal(data, &p); err != nil {
			return fmt.Errorf("decode policy %d: %w", id, err)
		}
		read[id] = p
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %d policies: %w", len(ids), err)
	}
	c.mu.Lock()
	if c.m == nil || len(c.m)+len(read) > maxCachedPolicies {
		c.m = make(map[int64]refresh.Policy, len(read))
	}
	for id, p := range read {
		p = p.WithLimits(c.limits)
		read[id] = p
		if len(c.m) < maxCachedPolicies {
			c.m[id] = clonePolicy(p)
		}
	}
	c.mu.Unlock()
	for _, p := range pending {
		policy, ok := read[p.id]
		if !ok {
			return fmt.Errorf("model %q: policy %d not found", models[p.index].ID, p.id)
		}
		models[p.index].Policy = clonePolicy(policy)
	}
	return nil
}

// clonePolicy returns a copy of p that shares no mutable memory with it.
// Empty lists stay empty and non-nil: for Delays and NonRetryable that
// differs from nil.
func clonePolicy(p refresh.Policy) refresh.Policy {
	p.Retry.Delays = slices.Clone(p.Retry.Delays)
	p.Retry.RetryOn = slices.Clone(p.Retry.RetryOn)
	p.Retry.NonRetryable = slices.Clone(p.Retry.NonRetryable)
	if p.Retry.Backoff != nil {
		b := *p.Retry.Backoff
		p.Retry.Backoff = &b
	}
	if p.Retry.Align != nil {
		a := *p.Retry.Align
		p.Retry.Align = &a
	}
	return p
}
