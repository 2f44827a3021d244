package memory

import (
	"github.com/freshen-dev/freshen/refresh"
)

// SetEvents sets the lifecycle names someone subscribes to: a batch's event
// is kept for TakeEvents only if one of its names is in names, if the
// Publisher revokes its attempt, or if it is a success that changed the
// data of a model with dependents, as refresh/postgres does. Without it
// every event is kept.
func (s *Store) SetEvents(names refresh.EventNames) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = names
}

// keepEvents appends to the events to take those of events that s.names
// and the Publisher need; the caller holds s.mu, and has written the batch
// of events.
func (s *Store) keepEvents(events []refresh.Event) {
	if s.names == (refresh.EventNames{}) {
		s.events = append(s.events, events...)
		return
	}
	var upstreams map[string]bool // the models with dependents, read once
	for _, e := range events {
		switch {
		case s.names.Keeps(e):
		case e.Propagates():
			if upstreams == nil {
				upstreams = s.upstreams()
			}
			if !upstreams[e.ModelID] {
				continue
			}
		default:
			continue
		}
		s.events = append(s.events, e)
	}
}

// upstreams returns the ids that models name among their upstreams; the
// caller holds s.mu.
func (s *Store) upstreams() map[string]bool {
	out := map[string]bool{}
	for _, m := range s.models {
		for _, u := range m.Upstreams {
			out[u] = true
		}
	}
	return out
}
