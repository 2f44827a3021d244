package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// Service is what the API and the simulator call to create models and act
// on them. Each call is one store transaction; its lifecycle events are
// published after it commits.
type Service struct {
	Store  Store
	Clock  Clock
	Limits Limits
	Logger *slog.Logger
	// Metrics counts the events of the actions; nil counts nothing.
	Metrics *Metrics
	// WakeFunc, if set, is called when a model may have become due earlier
	// than planned (the scheduler's Wake).
	WakeFunc func()
	// EventsFunc, if set, is called after a call that wrote events commits
	// (the Publisher's Wake).
	EventsFunc func()
}

// Actions on a model.
const (
	ActionTrigger = "trigger"
	ActionEnable  = "enable"
	ActionPause   = "pause"
	ActionResume  = "resume"
	ActionCancel  = "cancel"
)

// PutRequest creates or replaces a model.
type PutRequest struct {
	ID      string          `json:"id"`
	Queue   string          `json:"queue"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Policy  json.RawMessage `json:"policy"`
	// Trigger asks for a refresh now (on create and on replace alike).
	Trigger bool `json:"trigger"`
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`)

// DefaultQueue is the queue of a model that names none.
const DefaultQueue = "default"

// Put creates the model or replaces its queue, payload and policy. A new
// model gets its first plan (Create) and created is true. A replaced model
// keeps its state;
// when it is idle, enabled and not in a retry round, its next run is
// re-planned under the new schedule. Trigger then refreshes it at once.
func (s *Service) Put(ctx context.Context, req PutRequest) (Model, bool, error) {
	var errs []FieldError
	if !namePattern.MatchString(req.ID) {
		errs = append(errs, FieldError{Field: "id", Rule: "must be 1 to 200 letters, digits or ._:@- starting with a letter or digit"})
	}
	if req.Queue == "" {
		req.Queue = DefaultQueue
	}
	if !namePattern.MatchString(req.Queue) {
		errs = append(errs, FieldError{Field: "queue", Rule: "must be 1 to 200 letters, digits or ._:@- starting with a letter or digit"})
	}
	if len(req.Payload) > 0 && !json.Valid(req.Payload) {
		errs = append(errs, FieldError{Field: "payload", Rule: "must be JSON"})
	}
	if len(req.Policy) == 0 {
		req.Policy = json.RawMessage("{}")
	}
	policy, err := ParsePolicy(req.Policy, s.Limits)
	if err != nil {
		var v *ValidationError
		if !errors.As(err, &v) {
			return Model{}, false, err
		}
		for _, f := range v.Fields {
			f.Field = strings.TrimSuffix("policy."+f.Field, ".")
			errs = append(errs, f)
		}
	}
	if len(errs) > 0 {
		return Model{}, false, &ValidationError{Fields: errs}
	}
	now := s.Clock.Now()
	var out Model
	var created bool
	var ch changes
	err = s.Store.Modify(ctx, []string{req.ID}, func(found []Model) (Batch, error) {
		ch = changes{}
		var m Model
		var d Decision
		created = len(found) == 0
		if created {
			m, d = Create(Model{ID: req.ID, Queue: req.Queue, Payload: req.Payload, Policy: policy}, req.Trigger, now)
			ch.add(Model{ID: req.ID}, m, d, now)
		} else {
			before := found[0]
			m = before
			m.Queue, m.Payload, m.Policy = req.Queue, req.Payload, policy
			if req.Trigger {
				m, d = Trigger(m, now)
				ch.add(before, m, d, now)
			} else {
				if !m.Running() && !m.Disabled() && m.AttemptNo == 0 {
					m.RefreshAt, _ = m.First(now)
				}
				ch.put(Change{Model: m})
			}
		}
		out = m
		return ch.Batch, nil
	})
	if err != nil {
		return Model{}, false, fmt.Errorf("put model %s: %w", req.ID, err)
	}
	s.committed(ch.Events, true)
	return out, created, nil
}

// Act applies an action (trigger, enable, pause, resume, cancel) to model
// id and returns the model after it with the decision. An action that
// changes nothing (Decision.Unchanged) writes and publishes nothing.
func (s *Service) Act(ctx context.Context, id, action string) (Model, Decision, error) {
	now := s.Clock.Now()
	var apply func(Model) (Model, Decision)
	switch action {
	case ActionTrigger:
		apply = func(m Model) (Model, Decision) { return Trigger(m, now) }
	case ActionEnable:
		apply = func(m Model) (Model, Decision) { return Enable(m, now) }
	case ActionPause:
		apply = Pause
	case ActionResume:
		apply = func(m Model) (Model, Decision) { return Resume(m, now) }
	case ActionCancel:
		apply = func(m Model) (Model, Decision) { return Cancel(m, now) }
	default:
		return Model{}, Decision{}, Errorf(EINVALID, "unknown action %q: want trigger, enable, pause, resume or cancel", action)
	}
	var out Model
	var dec Decision
	var ch changes
	err := s.Store.Modify(ctx, []string{id}, func(found []Model) (Batch, error) {
		if len(found) == 0 {
			return Batch{}, Errorf(ENOTFOUND, "model %q not found", id)
		}
		ch = changes{}
		out, dec = apply(found[0])
		ch.add(found[0], out, dec, now)
		return ch.Batch, nil
	})
	if err != nil {
		return Model{}, Decision{}, fmt.Errorf("%s model %s: %w", action, id, err)
	}
	s.committed(ch.Events, len(ch.Events) > 0)
	return out, dec, nil
}

// Delete removes model id and its history. A running attempt is over: its
// outcome is stale and its worker is told.
func (s *Service) Delete(ctx context.Context, id string) error {
	now := s.Clock.Now()
	var ch changes
	err := s.Store.Modify(ctx, []string{id}, func(found []Model) (Batch, error) {
		if len(found) == 0 {
			return Batch{}, Errorf(ENOTFOUND, "model %q not found", id)
		}
		ch = changes{}
		m, d := Delete(found[0])
		ch.add(found[0], m, d, now)
		ch.Changes[len(ch.Changes)-1].Delete = true
		return ch.Batch, nil
	})
	if err != nil {
		return fmt.Errorf("delete model %s: %w", id, err)
	}
	s.committed(ch.Events, false)
	return nil
}

// committed reports the events of a committed call and, if wake, wakes
// the scheduler.
func (s *Service) committed(events []Event, wake bool) {
	metrics := s.Metrics
	if metrics == nil {
		metrics = &Metrics{}
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	report(metrics, log, events, s.EventsFunc)
	if s.WakeFunc != nil && wake {
		s.WakeFunc()
	}
}
