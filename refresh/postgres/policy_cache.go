package postgres

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/freshen-dev/freshen/refresh"
)

// maxCachedPolicies bounds a policyCache; when it is full it starts again
// empty.
const maxCachedPolicies = 1024

// policyCache decodes stored policies and remembers each result by its
// stored JSON: models mostly share a few policies, and decoding a policy
// was most of the CPU cost of reading a model. Every caller receives a copy
// of its own, so changing one changes neither the cache nor what others
// receive. It is safe for concurrent use; the zero value is empty.
type policyCache struct {
	mu sync.Mutex
	m  map[string]refresh.Policy
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

// decode returns the policy stored as data.
func (c *policyCache) decode(data []byte) (refresh.Policy, error) {
	c.mu.Lock()
	p, ok := c.m[string(data)]
	c.mu.Unlock()
	if ok {
		return clonePolicy(p), nil
	}
	return c.decodeNew(data)
}

// decodeNew decodes a policy that is not in the cache and adds it. It is
// apart from decode so that only a miss puts a policy on the heap (for
// json.Unmarshal).
func (c *policyCache) decodeNew(data []byte) (refresh.Policy, error) {
	var p refresh.Policy
	if err := json.Unmarshal(data, &p); err != nil {
		return refresh.Policy{}, err
	}
	c.mu.Lock()
	p = p.WithLimits(c.limits)
	if c.m == nil || len(c.m) >= maxCachedPolicies {
		c.m = make(map[string]refresh.Policy)
	}
	c.m[string(data)] = clonePolicy(p)
	c.mu.Unlock()
	return p, nil
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
