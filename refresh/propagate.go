package refresh

import (
	"context"
	"fmt"
	"slices"
)

// Propagate brings the upstream triggers of committed events (docs/policy.md):
// after each success that changed the data (event success,
// not unchanged), every dependent of its model whose condition holds gets
// UpstreamTrigger, in store transactions of propagateBatch dependents that
// wait for dependents another transaction holds. It returns how many
// triggers it wrote.
//
// The Publisher calls it with the events it takes from the store, before
// it publishes them: a success's triggers are written before its event
// leaves the store, so a crash loses none. A batch of events handled twice
// (the publish failed after the triggers committed) triggers nothing
// twice: a dependent whose run already covers the change is left alone
// (UpstreamCovered).
func (s *Service) Propagate(ctx context.Context, events []Event) (int, error) {
	var changed []string // in the order of the events
	seen := map[string]bool{}
	for _, e := range events {
		if e.Propagates() && !seen[e.ModelID] {
			seen[e.ModelID] = true
			changed = append(changed, e.ModelID)
		}
	}
	if len(changed) == 0 {
		return 0, nil
	}
	deps, err := s.Store.Dependents(ctx, changed)
	if err != nil {
		return 0, fmt.Errorf("propagate: dependents of %d models: %w", len(changed), err)
	}
	if len(deps) == 0 {
		return 0, nil
	}
	// The upstreams are read before the dependents are locked, as an
	// upstream's state is read anyway without its lock.
	var ids, upIDs []string
	clear(seen)
	for id, ups := range deps {
		ids = append(ids, id)
		for _, u := range ups {
			if !seen[u] {
				seen[u] = true
				upIDs = append(upIDs, u)
			}
		}
	}
	slices.Sort(ids)
	ups, err := s.Store.Upstreams(ctx, upIDs)
	if err != nil {
		return 0, fmt.Errorf("propagate: read %d upstreams: %w", len(upIDs), err)
	}
	total := 0
	for chunk := range slices.Chunk(ids, propagateBatch) {
		var ch changes
		triggers := 0
		err = s.Store.Modify(ctx, chunk, func(found []Model) (Batch, error) {
			ch, triggers = changes{}, 0
			now := s.Clock.Now()
			for _, dep := range found {
				for _, from := range changed {
					u, ok := ups[from]
					if !ok || !slices.Contains(dep.Upstreams, from) || UpstreamCovered(dep, u, now) {
						continue
					}
					after, d := UpstreamTrigger(dep, ups, from, now)
					if d.Event == "" || d.Unchanged {
						continue
					}
					ch.add(dep, after, d, now)
					dep = after
					triggers++
				}
			}
			return ch.Batch, nil
		})
		if err != nil {
			return total, fmt.Errorf("propagate the changes of %d models: %w", len(changed), err)
		}
		s.committed(ch.Events, triggers > 0)
		total += triggers
	}
	return total, nil
}

// propagateBatch is the number of dependents one transaction of Propagate
// triggers: a model with many dependents, or dependents with large
// payloads, cost a transaction no more than this many models. A batch of
// events handled again after a failure half-way triggers nothing twice
// (see Propagate).
const propagateBatch = 100
