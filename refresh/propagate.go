package refresh

import (
	"context"
	"fmt"
	"slices"
)

// Propagate brings the upstream triggers of committed events (DESIGN.md
// section 6): after each success that changed the data (event success,
// not unchanged), every dependent of its model whose condition holds gets
// UpstreamTrigger, all in one store transaction that waits for dependents
// another transaction holds. It returns how many triggers it wrote.
//
// The Publisher calls it with the events it takes from the store, before
// it publishes them: a success's triggers are written before its event
// leaves the store, so a crash loses none. A batch of events handled twice
// (the publish failed after the triggers committed) triggers nothing
// twice: a dependent whose run already covers the change is left alone
// (UpstreamCovered).
func (s *Service) Propagate(ctx context.Context, events []Event) (int, error) {
	var changed []string
	for _, e := range events {
		if e.Type == EventSuccess && !e.Unchanged && !slices.Contains(changed, e.ModelID) {
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
	var ch changes
	triggers := 0
	err = s.Store.Modify(ctx, deps, func(found []Model) (Batch, error) {
		ch, triggers = changes{}, 0
		var ids []string
		for _, dep := range found {
			for _, u := range dep.Upstreams {
				if !slices.Contains(ids, u) {
					ids = append(ids, u)
				}
			}
		}
		ups, err := s.Store.Upstreams(ctx, ids)
		if err != nil {
			return Batch{}, err
		}
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
		return 0, fmt.Errorf("propagate the changes of %d models: %w", len(changed), err)
	}
	s.committed(ch.Events, triggers > 0)
	return triggers, nil
}
