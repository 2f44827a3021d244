// Package scenarios runs one model through the real scheduler and outcome
// loops on a virtual clock, as `freshen simulate` does (docs/simulate.md
// ), and holds the scenario files whose timelines are checked in.
package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Spec is a simulation: one model, how its attempts behave, and actions.
type Spec struct {
	Start    time.Time
	Until    time.Time
	Model    SpecModel
	Attempts []Behaviour
	Default  Behaviour
	Actions  []Action
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
	// Until or For is the time a snooze asks for (one of the two).
	Until time.Time
	For   time.Duration
	// Unchanged marks a success whose data did not change.
	Unchanged bool
}

// Action is a user action at a time.
type Action struct {
	At time.Time
	Do string
}

// Outcomes a simulated attempt can have.
const (
	behaveSuccess = "success"
	behaveFailure = "failure"
	behaveTimeout = "timeout"
	behaveSnooze  = "snooze"
)

// the wire shapes, decoded strictly.
type specJSON struct {
	Start    string          `json:"start"`
	Until    string          `json:"until"`
	Model    *modelJSON      `json:"model"`
	Attempts []behaviourJSON `json:"attempts"`
	Default  *behaviourJSON  `json:"default"`
	Actions  []actionJSON    `json:"actions"`
}

type modelJSON struct {
	ID      string          `json:"id"`
	Trigger bool            `json:"trigger"`
	Queue   string          `json:"queue"`
	Payload json.RawMessage `json:"payload"`
	Policy  json.RawMessage `json:"policy"`
}

type behaviourJSON struct {
	Outcome     string `json:"outcome"`
	After       string `json:"after"`
	Kind        string `json:"kind"`
	Message     string `json:"message"`
	Retryable   *bool  `json:"retryable"`
	UserMessage string `json:"user_message"`
	Until       string `json:"until"`
	For         string `json:"for"`
	Unchanged   bool   `json:"unchanged"`
}

type actionJSON struct {
	At string `json:"at"`
	Do string `json:"do"`
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
	if raw.Model == nil {
		bad("model", "is required")
	} else {
		spec.Model = SpecModel{ID: raw.Model.ID, Trigger: raw.Model.Trigger, Queue: raw.Model.Queue, Payload: raw.Model.Payload, Policy: raw.Model.Policy}
		if raw.Model.ID == "" {
			bad("model.id", "is required")
		}
		if len(spec.Model.Policy) == 0 {
			spec.Model.Policy = json.RawMessage("{}")
		}
		if _, err := refresh.ParsePolicy(spec.Model.Policy, lim); err != nil {
			var v *refresh.ValidationError
			if !errors.As(err, &v) {
				return Spec{}, err
			}
			for _, f := range v.Fields {
				bad("model.policy."+f.Field, "%s", f.Rule)
			}
		}
	}
	behaviour := func(field string, b behaviourJSON) Behaviour {
		out := Behaviour{Outcome: b.Outcome, Kind: b.Kind, Message: b.Message, Retryable: b.Retryable, UserMessage: b.UserMessage, Unchanged: b.Unchanged}
		switch b.Outcome {
		case behaveSuccess, behaveTimeout, behaveSnooze:
			if b.Kind != "" || b.Message != "" || b.Retryable != nil || b.UserMessage != "" {
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
		if (b.Until != "" || b.For != "") && b.Outcome != behaveSnooze {
			bad(field, "until and for go with outcome snooze only")
		}
		if b.Outcome == behaveSnooze {
			switch {
			case b.Until != "" && b.For != "":
				bad(field+".until", "a snooze sets until or for, not both")
			case b.Until != "":
				out.Until = instant(field+".until", b.Until)
			case b.For != "":
				d, err := refresh.ParseDuration(b.For)
				if err != nil || d <= 0 {
					bad(field+".for", "must be a duration > 0 like \"15m\" or \"PT15M\", got %q", b.For)
				}
				out.For = time.Duration(d)
			default:
				bad(field+".until", "a snooze needs until or for")
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
	for i, b := range raw.Attempts {
		spec.Attempts = append(spec.Attempts, behaviour(fmt.Sprintf("attempts[%d]", i), b))
	}
	spec.Default = Behaviour{Outcome: behaveSuccess}
	if raw.Default != nil {
		spec.Default = behaviour("default", *raw.Default)
	}
	for i, a := range raw.Actions {
		field := fmt.Sprintf("actions[%d]", i)
		at := instant(field+".at", a.At)
		switch a.Do {
		case refresh.ActionTrigger, refresh.ActionEnable, refresh.ActionPause, refresh.ActionResume, refresh.ActionCancel:
		default:
			bad(field+".do", "must be trigger, enable, pause, resume or cancel, got %q", a.Do)
		}
		if !at.IsZero() && (at.Before(spec.Start) || at.After(spec.Until)) {
			bad(field+".at", "must be between start and until")
		}
		if i > 0 && !at.IsZero() && at.Before(spec.Actions[i-1].At) {
			bad(field+".at", "actions must be in time order")
		}
		spec.Actions = append(spec.Actions, Action{At: at, Do: a.Do})
	}
	if len(errs) > 0 {
		return Spec{}, &refresh.ValidationError{Fields: errs}
	}
	return spec, nil
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
