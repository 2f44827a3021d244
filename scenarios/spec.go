// Package scenarios runs one model, or several that name each other as
// upstreams, through the real scheduler, outcome and event loops on a
// virtual clock, as `freshen simulate` does (docs/simulate.md),
// and holds the scenario files whose timelines are checked in.
package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Spec is a simulation: one model, how its attempts behave, and actions;
// or, in the multi-model form, several models, each with its own
// attempts.
type Spec struct {
	Start    time.Time
	Until    time.Time
	Model    SpecModel
	Attempts []Behaviour
	Default  Behaviour
	// Models, if not empty, is the multi-model form (docs/policy.md):
	// the models in the order they are created, each with its own Attempts
	// and Default; Model, Attempts and Default are then unused, and every
	// action names its model. Timeline entries then carry their model.
	Models []SpecModel
	// Limits are the concurrency and rate limits in force from Start.
	Limits []refresh.Limit
	// Starts are the starts the rate limits counted before Start (each
	// Limit names one of Limits, by Limit.Name), as their logs hold them.
	// Callers that project a real model ahead set them; the JSON spec has
	// no such field.
	Starts  []refresh.LimitStarts
	Actions []Action
	// Replay, if set, decides how attempts behave instead of Attempts:
	// by their start time, as a recorded history did (Default when it has
	// no attempt of known outcome). The JSON spec has no such field.
	Replay *Replay
}

// SpecModel is the simulated model.
type SpecModel struct {
	ID      string
	Trigger bool
	Queue   string
	// RateKey is the model's rate_key: the rate_key limits of that key
	// cover it.
	RateKey string
	Payload json.RawMessage
	Policy  json.RawMessage
	// State, if set, is where the model stands at Start, instead of where
	// a new model would: Run creates the model, then gives it State and
	// CreatedAt (the anchor of a schedule without DTSTART; zero: Start),
	// and the timeline starts from there, without a create entry. A
	// running attempt in State (AttemptUID set) counts as the first
	// attempt: it behaves as Attempts[0] and its outcome arrives After its
	// StartedAt, at Start at the earliest. Callers that project a real
	// model ahead set it; the JSON spec has no such field.
	State     *refresh.State
	CreatedAt time.Time
	// Upstreams and UpstreamsMode are the model's upstreams (docs/policy.md).
	Upstreams     []string
	UpstreamsMode string
	// Attempts and Default are how the model's attempts behave, in the
	// multi-model form (Spec.Models) only.
	Attempts []Behaviour
	Default  Behaviour
}

// Behaviour is what one attempt does: its outcome and when it arrives.
type Behaviour struct {
	// Outcome is success, failure, snooze or timeout.
	Outcome     string
	After       time.Duration
	Kind        string
	Message     string
	Retryable   *bool
	UserMessage string
	// Unchanged marks a success whose data did not change.
	Unchanged bool
	// Until and For are a snooze's time to try again (one of the two): an
	// instant, or a duration from the outcome's arrival.
	Until time.Time
	For   time.Duration
	// field names the behaviour in the spec (e.g. "models[1].attempts[0]")
	// for errors found while running.
	field string
}

// Action is a user action at a time, on the spec's model or, in the
// multi-model form, on Model.
type Action struct {
	At    time.Time
	Do    string
	Model string
}

// Outcomes a simulated attempt can have.
const (
	behaveSuccess = "success"
	behaveFailure = "failure"
	behaveSnooze  = "snooze"
	behaveTimeout = "timeout"
)

// Title names the simulation: its model's id, or the ids of its models.
func (s Spec) Title() string {
	if len(s.Models) == 0 {
		return s.Model.ID
	}
	ids := make([]string, len(s.Models))
	for i, m := range s.Models {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

// the wire shapes, decoded strictly.
type specJSON struct {
	Start    string          `json:"start"`
	Until    string          `json:"until"`
	Model    *modelJSON      `json:"model"`
	Models   []modelJSON     `json:"models"`
	Limits   []limitJSON     `json:"limits"`
	Attempts []behaviourJSON `json:"attempts"`
	Default  *behaviourJSON  `json:"default"`
	Actions  []actionJSON    `json:"actions"`
}

type modelJSON struct {
	ID            string          `json:"id"`
	Trigger       bool            `json:"trigger"`
	Queue         string          `json:"queue"`
	RateKey       string          `json:"rate_key"`
	Payload       json.RawMessage `json:"payload"`
	Policy        json.RawMessage `json:"policy"`
	Upstreams     []string        `json:"upstreams"`
	UpstreamsMode string          `json:"upstreams_mode"`
	// Attempts and Default go with the multi-model form only.
	Attempts []behaviourJSON `json:"attempts"`
	Default  *behaviourJSON  `json:"default"`
}

type limitJSON struct {
	Kind       string `json:"kind"`
	Key        string `json:"key"`
	MaxRunning *int   `json:"max_running"`
	MaxStarts  *int   `json:"max_starts"`
	Per        string `json:"per"`
	Burst      *int   `json:"burst"`
}

type behaviourJSON struct {
	Outcome     string `json:"outcome"`
	After       string `json:"after"`
	Kind        string `json:"kind"`
	Message     string `json:"message"`
	Retryable   *bool  `json:"retryable"`
	UserMessage string `json:"user_message"`
	Unchanged   bool   `json:"unchanged"`
	Until       string `json:"until"`
	For         string `json:"for"`
}

type actionJSON struct {
	At    string `json:"at"`
	Do    string `json:"do"`
	Model string `json:"model"`
}

// ParseSpec reads a spec. Every broken rule is reported in a
// *refresh.ValidationError naming the field, e.g. "attempts[1].outcome".
// The model's policy is checked against lim.
func ParseSpec(data []byte, lim refresh.Limits) (Spec, error) {
	var raw specJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Spec{}, &refresh.ValidationError{Fields: []refresh.FieldError{jsonError(err)}}
	}
	var errs []refresh.FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, refresh.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	instant := func(field, s string) time.Time {
		if s == "" {
			bad(field, "is required (RFC 3339 time)")
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad(field, "must be an RFC 3339 time, got %q", s)
		}
		return t.UTC()
	}
	var spec Spec
	spec.Start = instant("start", raw.Start)
	spec.Until = instant("until", raw.Until)
	if !spec.Start.IsZero() && !spec.Until.IsZero() && spec.Until.Before(spec.Start) {
		bad("until", "must not be before start")
	}
	if !spec.Start.IsZero() && spec.Until.Sub(spec.Start) > 366*24*time.Hour {
		bad("until", "must be at most one year after start")
	}
	model := func(field string, m modelJSON) SpecModel {
		sm := SpecModel{ID: m.ID, Trigger: m.Trigger, Queue: m.Queue, RateKey: m.RateKey, Payload: m.Payload, Policy: m.Policy,
			Upstreams: m.Upstreams, UpstreamsMode: m.UpstreamsMode}
		if m.ID == "" {
			bad(field+".id", "is required")
		} else if !refresh.ValidID(m.ID) {
			bad(field+".id", "%s, got %q", refresh.IDRule, m.ID)
		}
		if m.Queue != "" && !refresh.ValidQueue(m.Queue) {
			bad(field+".queue", "%s, got %q", refresh.QueueRule, m.Queue)
		}
		if m.RateKey != "" && !refresh.ValidRateKey(m.RateKey) {
			bad(field+".rate_key", "%s, got %q", refresh.RateKeyRule, m.RateKey)
		}
		if len(sm.Policy) == 0 {
			sm.Policy = json.RawMessage("{}")
		}
		if _, err := refresh.ParsePolicy(sm.Policy, lim); err != nil {
			var v *refresh.ValidationError
			if !errors.As(err, &v) {
				bad(field+".policy", "%s", err)
			} else {
				for _, f := range v.Fields {
					bad(field+".policy."+f.Field, "%s", f.Rule)
				}
			}
		}
		if err := refresh.CheckUpstreams(m.ID, m.Upstreams, m.UpstreamsMode, 0); err != nil {
			var v *refresh.ValidationError
			if !errors.As(err, &v) {
				bad(field+".upstreams", "%s", err)
			} else {
				for _, f := range v.Fields {
					bad(field+"."+f.Field, "%s", f.Rule)
				}
			}
		}
		return sm
	}
	behaviour := func(field string, b behaviourJSON) Behaviour {
		out := Behaviour{Outcome: b.Outcome, Kind: b.Kind, Message: b.Message, Retryable: b.Retryable, UserMessage: b.UserMessage,
			Unchanged: b.Unchanged, field: field}
		failureFields := b.Kind != "" || b.Message != "" || b.Retryable != nil || b.UserMessage != ""
		snoozeFields := b.Until != "" || b.For != ""
		switch b.Outcome {
		case behaveSuccess, behaveTimeout, behaveSnooze:
			if failureFields {
				bad(field, "kind, message, retryable and user_message go with outcome failure only")
			}
		case behaveFailure:
			if out.Kind == "" {
				out.Kind = "error"
			}
		default:
			bad(field+".outcome", "must be success, failure, snooze or timeout, got %q", b.Outcome)
		}
		if b.Unchanged && b.Outcome != behaveSuccess {
			bad(field+".unchanged", "goes with outcome success only")
		}
		if b.Outcome != behaveSnooze && snoozeFields {
			bad(field, "until and for go with outcome snooze only")
		}
		if b.Outcome == behaveSnooze {
			switch {
			case b.Until == "" && b.For == "":
				bad(field+".until", "a snooze needs until (RFC 3339 time) or for (duration)")
			case b.Until != "" && b.For != "":
				bad(field+".until", "a snooze sets until or for, not both")
			case b.Until != "":
				t, err := time.Parse(time.RFC3339, b.Until)
				if err != nil {
					bad(field+".until", "must be an RFC 3339 time, got %q", b.Until)
				}
				out.Until = t.UTC()
			default:
				d, err := refresh.ParseDuration(b.For)
				if err != nil || d <= 0 {
					bad(field+".for", "must be a duration > 0 like \"30m\" or \"PT30M\", got %q", b.For)
				}
				out.For = time.Duration(d)
			}
		}
		if b.After != "" {
			d, err := refresh.ParseDuration(b.After)
			if err != nil || d < 0 {
				bad(field+".after", "must be a duration >= 0 like \"2m\" or \"PT2M\", got %q", b.After)
			}
			out.After = time.Duration(d)
		}
		return out
	}
	behaviours := func(field string, list []behaviourJSON, def *behaviourJSON) ([]Behaviour, Behaviour) {
		var out []Behaviour
		for i, b := range list {
			out = append(out, behaviour(fmt.Sprintf("%sattempts[%d]", field, i), b))
		}
		d := Behaviour{Outcome: behaveSuccess, field: field + "default"}
		if def != nil {
			d = behaviour(field+"default", *def)
		}
		return out, d
	}
	ids := map[string]int{} // model id -> index in the spec
	switch {
	case raw.Model != nil && raw.Models != nil:
		bad("models", "goes without model (one model, or several)")
	case raw.Model != nil:
		if len(raw.Model.Attempts) > 0 || raw.Model.Default != nil {
			bad("model", "attempts and default go beside model, not in it")
		}
		spec.Model = model("model", *raw.Model)
		spec.Attempts, spec.Default = behaviours("", raw.Attempts, raw.Default)
		ids[spec.Model.ID] = 0
	case raw.Models != nil:
		if len(raw.Attempts) > 0 || raw.Default != nil {
			bad("attempts", "with models, each model has its own attempts and default")
		}
		if len(raw.Models) == 0 {
			bad("models", "must name at least one model")
		}
		graph := map[string][]string{}
		for i, m := range raw.Models {
			field := fmt.Sprintf("models[%d]", i)
			sm := model(field, m)
			sm.Attempts, sm.Default = behaviours(field+".", m.Attempts, m.Default)
			if j, dup := ids[m.ID]; dup && m.ID != "" {
				bad(field+".id", "repeats models[%d].id %q", j, m.ID)
			} else {
				ids[m.ID] = i
			}
			spec.Models = append(spec.Models, sm)
			graph[m.ID] = m.Upstreams
		}
		// A cycle is named once, at the first model that closes it.
		for i, m := range spec.Models {
			if err := refresh.CheckUpstreamCycle(m.ID, m.Upstreams, graph); err != nil {
				var v *refresh.ValidationError
				if errors.As(err, &v) && len(v.Fields) > 0 {
					bad(fmt.Sprintf("models[%d].%s", i, v.Fields[0].Field), "%s", v.Fields[0].Rule)
				} else {
					bad(fmt.Sprintf("models[%d].upstreams", i), "%s", err)
				}
				break
			}
		}
	default:
		bad("model", "is required (or models, for several)")
		behaviours("", raw.Attempts, raw.Default) // every broken rule named, always
	}
	for i, l := range raw.Limits {
		field := fmt.Sprintf("limits[%d]", i)
		lm, errsOf := parseLimit(l)
		for _, f := range errsOf {
			if f.Field == "" {
				bad(field, "%s", f.Rule)
			} else {
				bad(field+"."+f.Field, "%s", f.Rule)
			}
		}
		for j, o := range spec.Limits {
			if o.Kind == lm.Kind && o.Key == lm.Key {
				bad(field, "repeats limits[%d] (%s %q)", j, lm.Kind, lm.Key)
			}
		}
		spec.Limits = append(spec.Limits, lm)
	}
	for i, a := range raw.Actions {
		field := fmt.Sprintf("actions[%d]", i)
		at := instant(field+".at", a.At)
		switch a.Do {
		case refresh.ActionTrigger, refresh.ActionEnable, refresh.ActionPause, refresh.ActionResume, refresh.ActionCancel:
		default:
			bad(field+".do", "must be trigger, enable, pause, resume or cancel, got %q", a.Do)
		}
		switch {
		case raw.Models != nil && a.Model == "":
			bad(field+".model", "is required with models (the id of one of them)")
		case a.Model == "":
		case raw.Models != nil:
			if _, ok := ids[a.Model]; !ok {
				bad(field+".model", "must be the id of one of the models, got %q", a.Model)
			}
		case raw.Model != nil && a.Model != raw.Model.ID:
			bad(field+".model", "must be the model's id %q or left out, got %q", raw.Model.ID, a.Model)
		}
		if !at.IsZero() && (at.Before(spec.Start) || at.After(spec.Until)) {
			bad(field+".at", "must be between start and until")
		}
		if i > 0 && !at.IsZero() && at.Before(spec.Actions[i-1].At) {
			bad(field+".at", "actions must be in time order")
		}
		spec.Actions = append(spec.Actions, Action{At: at, Do: a.Do, Model: a.Model})
	}
	if len(errs) > 0 {
		return Spec{}, &refresh.ValidationError{Fields: errs}
	}
	return spec, nil
}

// parseLimit reads a limit of the spec as the limits API takes it: kind,
// key, and max_running, max_starts with per (and burst), or both. It
// returns the broken rules in the order of the fields, each field named
// once: refresh.CheckLimit's, a count given as 0 or less (left out, it
// sets no bound), and a missing max_running or per.
func parseLimit(l limitJSON) (refresh.Limit, []refresh.FieldError) {
	var errs []refresh.FieldError
	named := func(field string) bool {
		return slices.ContainsFunc(errs, func(f refresh.FieldError) bool { return f.Field == field })
	}
	bad := func(field, format string, args ...any) {
		if !named(field) {
			errs = append(errs, refresh.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
		}
	}
	lm := refresh.Limit{Kind: l.Kind, Key: l.Key}
	if l.MaxRunning == nil && l.MaxStarts == nil {
		bad("max_running", "is required (an integer >= 1), unless max_starts is set")
	}
	count := func(name string, p *int) int {
		if p == nil {
			return 0
		}
		if rule := refresh.LimitNumberRule(name, *p); rule != "" {
			bad(name, "%s", rule)
		}
		return *p
	}
	lm.MaxRunning = count("max_running", l.MaxRunning)
	lm.MaxStarts = count("max_starts", l.MaxStarts)
	lm.Burst = count("burst", l.Burst)
	if l.Per != "" {
		d, err := refresh.ParseDuration(l.Per)
		if err != nil {
			bad("per", "%s", err)
		}
		lm.Per = d
	} else if l.MaxStarts != nil {
		bad("per", "is required with max_starts (a duration from %s to %s)",
			refresh.Duration(refresh.MinRatePer), refresh.Duration(refresh.MaxRatePer))
	}
	if err := refresh.CheckLimit(lm); err != nil {
		var v *refresh.ValidationError
		if !errors.As(err, &v) {
			return lm, append(errs, refresh.FieldError{Rule: err.Error()})
		}
		for _, f := range v.Fields {
			// A max_running left out is no error of its own beside a
			// max_starts refused above.
			if f.Field == "max_running" && l.MaxRunning == nil && named("max_starts") {
				continue
			}
			bad(f.Field, "%s", f.Rule)
		}
	}
	order := []string{"kind", "key", "max_running", "max_starts", "per", "burst"}
	slices.SortStableFunc(errs, func(a, b refresh.FieldError) int {
		return slices.Index(order, a.Field) - slices.Index(order, b.Field)
	})
	return lm, errs
}

// jsonError names the field of a decoding error where it can.
func jsonError(err error) refresh.FieldError {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return refresh.FieldError{Field: typ.Field, Rule: fmt.Sprintf("must be a %s, got %s", typ.Type, typ.Value)}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return refresh.FieldError{Field: strings.Trim(rest, `"`), Rule: "unknown field"}
	}
	return refresh.FieldError{Field: "spec", Rule: "must be a JSON object: " + msg}
}
