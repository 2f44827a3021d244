package memory

import (
	"context"
	"slices"
	"sort"

	"github.com/freshen-dev/freshen/refresh"
)

// PruneHistory deletes the attempts r asks for, under the store's mutex:
// among the r.Models models after r.After, up to r.Limit that started
// before r.Before, then up to r.Limit beyond the r.Keep newest of each.
func (s *Store) PruneHistory(_ context.Context, r refresh.PruneRequest) (refresh.PruneResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res refresh.PruneResult
	if r.Before.IsZero() && r.Keep <= 0 {
		res.Done = true
		return res, nil
	}
	ids := sortedIDsAfter(s.models, r.After)
	if len(ids) > r.Models {
		ids = ids[:r.Models]
	}
	if !r.Before.IsZero() {
		for _, id := range ids {
			list := s.attempts[id]
			kept := list[:0]
			for _, a := range list {
				if res.ByAge < r.Limit && a.StartedAt.Before(r.Before) {
					res.ByAge++
					continue
				}
				kept = append(kept, a)
			}
			s.setAttempts(id, kept)
		}
	}
	if r.Keep > 0 {
		for _, id := range ids {
			list := s.attempts[id]
			if len(list) <= r.Keep || res.ByCount == r.Limit {
				continue
			}
			// Newest last: by start, then by insertion.
			sort.SliceStable(list, func(i, j int) bool { return list[i].StartedAt.Before(list[j].StartedAt) })
			n := min(len(list)-r.Keep, r.Limit-res.ByCount)
			s.setAttempts(id, slices.Delete(list, 0, n))
			res.ByCount += n
		}
	}
	switch {
	case res.ByAge == r.Limit || res.ByCount == r.Limit:
		res.Next = r.After
	case len(ids) == r.Models:
		res.Next = ids[len(ids)-1]
	default:
		res.Done = true
	}
	return res, nil
}

// setAttempts stores the history of model id; the caller holds s.mu.
func (s *Store) setAttempts(id string, list []refresh.Attempt) {
	if len(list) == 0 {
		delete(s.attempts, id)
		return
	}
	s.attempts[id] = list
}

// sortedIDsAfter returns the keys of m (models or histories, by id) after
// after, in order; the caller holds the store's lock.
func sortedIDsAfter[V any](m map[string]V, after string) []string {
	var ids []string
	for id := range m {
		if id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Census counts by state the first f.Limit models f selects, in id
// order, overall and for the maxQueues queues with the most of them.
func (s *Store) Census(ctx context.Context, f refresh.Filter, maxQueues int) (refresh.Census, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	f.Limit, f.NoPayload, f.BoundPayloads = limit+1, true, false
	models, err := s.List(ctx, f)
	if err != nil {
		return refresh.Census{}, err
	}
	c := refresh.Census{Queues: map[string]refresh.ModelCounts{}}
	if len(models) > limit {
		models, c.More = models[:limit], true
	}
	for _, m := range models {
		c.All.Add(m)
		q := c.Queues[m.Queue]
		q.Add(m)
		c.Queues[m.Queue] = q
		c.Last = m.ID
	}
	topQueues(c.Queues, maxQueues)
	return c, nil
}

// CountModels counts the models by state, overall and per queue: the
// maxQueues queues with the most models (the others are in the overall
// counts only).
func (s *Store) CountModels(_ context.Context, maxQueues int) (refresh.ModelCounts, map[string]refresh.ModelCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all refresh.ModelCounts
	byQueue := map[string]refresh.ModelCounts{}
	for _, m := range s.models {
		all.Add(m)
		c := byQueue[m.Queue]
		c.Add(m)
		byQueue[m.Queue] = c
	}
	topQueues(byQueue, maxQueues)
	return all, byQueue, nil
}

// topQueues keeps in byQueue the maxQueues queues with the most models
// (by name among equals).
func topQueues(byQueue map[string]refresh.ModelCounts, maxQueues int) {
	if len(byQueue) <= maxQueues {
		return
	}
	names := make([]string, 0, len(byQueue))
	for q := range byQueue {
		names = append(names, q)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := byQueue[names[i]].Total(), byQueue[names[j]].Total()
		return a > b || a == b && names[i] < names[j]
	})
	for _, q := range names[max(maxQueues, 0):] {
		delete(byQueue, q)
	}
}
