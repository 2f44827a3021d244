package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// prefixIDs are ids around the ranges of the prefixes of testListPrefix:
// neighbours that a collation weighing '-' or '.' lightly, or case
// insensitively, would mix in ('acme1' < 'acme-2' < 'acme3' under
// en_US.UTF-8), and ids at both ends of each range.
var prefixIDs = []string{
	"A-1", "ACME-1", "Acme-1", "a", "ac", "acm", "acme", "acme-", "acme--", "acme-.", "acme-0", "acme-1",
	"acme-1.x", "acme-10", "acme-2", "acme-20", "acme-Z", "acme-_x", "acme-z", "acme-zz", "acme.", "acme.0",
	"acme0", "acme1", "acme3", "acme:x", "acme@x", "acmeZ", "acme_x", "acmez", "acmf", "acmf-1", "b",
	"z", "z-", "z.", "zz", "zz-1", "zz-2", "zzz",
}

// prefixes are the prefixes testListPrefix lists: every range boundary of
// prefixIDs.
var prefixes = []string{"acme-", "acme", "acme-1", "acm", "a", "z", "zz", "zz-", "A", "acme.", "Z", "9"}

// prefixModels writes prefixIDs, a third of them disabled and a third
// paused, and returns them in id order.
func prefixModels(t *testing.T, s refresh.Store) []refresh.Model {
	var ms []refresh.Model
	for i, id := range prefixIDs {
		m := model(id, t0)
		switch i % 3 {
		case 1:
			m.DisabledAt, m.DisabledReason = t0, "off"
		case 2:
			m.Paused = true
		}
		if i%2 == 0 {
			m.Queue = "even"
		}
		ms = append(ms, m)
	}
	put(t, s, ms...)
	slices.SortFunc(ms, func(a, b refresh.Model) int { return strings.Compare(a.ID, b.ID) })
	return ms
}

// selectIDs returns the ids of ms that f selects, as a store must: by
// prefix, after, until, disabled and queue, in id order, at most limit.
func selectIDs(ms []refresh.Model, f refresh.Filter, limit int) []string {
	out := []string{}
	for _, m := range ms {
		if len(out) == limit {
			break
		}
		if strings.HasPrefix(m.ID, f.Prefix) && m.ID > f.After && (f.Until == "" || m.ID <= f.Until) &&
			(f.Disabled == nil || *f.Disabled == m.Disabled()) && (f.Queue == "" || m.Queue == f.Queue) {
			out = append(out, m.ID)
		}
	}
	return out
}

func ids(ms []refresh.Model) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// testListPrefix lists by prefix: exactly the ids that start with it,
// bytewise, in byte order; an after before the range starts at the range,
// one past it selects nothing; until and the other filters narrow it.
func testListPrefix(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	ms := prefixModels(t, s)
	yes := true
	for _, p := range prefixes {
		afters := []string{"", "0", "acme-1", "acme-10", "acme.", "zz-1", "zzzz", p}
		for _, after := range afters {
			for _, f := range []refresh.Filter{
				{Prefix: p, After: after},
				{Prefix: p, After: after, Limit: 2},
				{Prefix: p, After: after, Until: "acme-2"},
				{Prefix: p, After: after, Disabled: &yes, Queue: "even"},
			} {
				limit := f.Limit
				if limit == 0 {
					limit = 100
				}
				got, err := s.List(ctx, f)
				require.NoError(t, err)
				require.Equal(t, selectIDs(ms, f, limit), ids(got), "filter %+v", f)
			}
		}
	}
}

// testCensusPrefix counts by prefix: the first Limit models of the range,
// by state and queue, whether more follow and the last one counted.
func testCensusPrefix(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	ms := prefixModels(t, s)
	for _, p := range prefixes {
		for _, limit := range []int{1, 3, 100} {
			f := refresh.Filter{Prefix: p, Limit: limit}
			c, err := s.Census(ctx, f, 10)
			require.NoError(t, err)
			all := selectIDs(ms, refresh.Filter{Prefix: p}, 1000)
			counted := all[:min(limit, len(all))]
			var want refresh.ModelCounts
			queues := map[string]refresh.ModelCounts{}
			for _, m := range ms {
				if slices.Contains(counted, m.ID) {
					want.Add(m)
					q := queues[m.Queue]
					q.Add(m)
					queues[m.Queue] = q
				}
			}
			what := fmt.Sprintf("prefix %q, limit %d", p, limit)
			require.Equal(t, want, c.All, what)
			require.Equal(t, queues, c.Queues, what)
			require.Equal(t, len(all) > limit, c.More, what)
			last := ""
			if len(counted) > 0 {
				last = counted[len(counted)-1]
			}
			require.Equal(t, last, c.Last, what)
		}
	}
	c, err := s.Census(ctx, refresh.Filter{Limit: 1000}, 1)
	require.NoError(t, err)
	require.Len(t, c.Queues, 1, "the queue with the most models only")
	require.Equal(t, int64(len(ms)), c.All.Total())
}
