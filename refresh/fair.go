package refresh

import (
	"slices"
	"strings"
	"time"
)

// This file holds the fair turns of docs/policy.md: wherever starts are
// handed out under limits (the models of one scheduler pass, and the
// models a store offers a limit's free starts and slots to), the tenants
// take turns: the first model of each tenant, then the second of each,
// and so on, each tenant's models by refresh_at then id. The turns go
// round across passes and instances: each limit keeps the tenant that
// took its last start (its turn, Slots.Turns, "" for none), and the
// tenants go in the bytewise order of their names starting with the first
// after it, wrapping around (the tenant "" of the models under no tenant
// prefix takes its turn like any other).

// FairOrder sorts ms in the order of the fair turns: by each model's rank
// among the models of its tenant (tenant(m); by refresh_at, then id),
// then its tenant in the cyclic order after turn(m) (the tenant that took
// the last start of the limit m's start is handed out under; nil for ""),
// then refresh_at, then id. With one tenant (every tenant "", as without
// tenant prefixes) it is the order of refresh_at, then id.
func FairOrder(ms []Model, tenant, turn func(Model) string) {
	byDue := func(a, b Model) int {
		if c := a.RefreshAt.Compare(b.RefreshAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	type entry struct {
		tenant    string
		rank      int
		wrapped   bool // the tenant comes after the wrap: it is not after the turn
		refreshAt time.Time
		id        string
		i         int
	}
	es := make([]entry, len(ms))
	one := true
	for i, m := range ms {
		es[i] = entry{tenant: tenant(m), refreshAt: m.RefreshAt, id: m.ID, i: i}
		after := ""
		if turn != nil {
			after = turn(m)
		}
		es[i].wrapped = es[i].tenant <= after
		one = one && es[i].tenant == es[0].tenant
	}
	if one {
		slices.SortStableFunc(ms, byDue)
		return
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := strings.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		if c := a.refreshAt.Compare(b.refreshAt); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for k := range es {
		if k > 0 && es[k].tenant == es[k-1].tenant {
			es[k].rank = es[k-1].rank + 1
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.wrapped != b.wrapped {
			if a.wrapped {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		if c := a.refreshAt.Compare(b.refreshAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return a.i - b.i
	})
	sorted := make([]Model, len(ms))
	for k, e := range es {
		sorted[k] = ms[e.i]
	}
	copy(ms, sorted)
}
