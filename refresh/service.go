package refresh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
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
	// Upstreams and UpstreamsMode are the model's upstreams (docs/policy.md);
	// left out: none.
	Upstreams     []string `json:"upstreams,omitempty"`
	UpstreamsMode string   `json:"upstreams_mode,omitempty"`
	// RateKey is the key of the rate_key limits that cover the model
	// (ValidRateKey); left out or "": none.
	RateKey string `json:"rate_key,omitempty"`
	// Trigger asks for a refresh now (on create and on replace alike).
	Trigger bool `json:"trigger"`
	// IfMatch, if not empty, lists definition tags (see DefinitionTag), one
	// of which the stored model must have; "*" matches any stored model.
	// When none matches, or the model does not exist, Put fails with code
	// EPRECONDITION and writes nothing.
	IfMatch []string `json:"-"`
	// IfNoneMatch, if not empty, lists definition tags the stored model
	// must not have; "*" stands for every tag, so that Put only creates.
	// When one matches, Put fails with code EPRECONDITION.
	IfNoneMatch []string `json:"-"`
}

// PatchRequest changes part of a model's definition with the semantics of
// a JSON merge patch (RFC 7396) over the object {"queue", "payload",
// "policy", "upstreams", "upstreams_mode", "rate_key"}, the policy stated
// with every default as the model shows it. Each of them is a member of
// that patch: nil leaves the member as it is, JSON null returns it to its
// default (queue "default", no payload, the default policy, no upstreams,
// mode all, no rate key), an object merges into the stored object member by member (null
// removing a member) and any other value replaces it.
type PatchRequest struct {
	ID            string
	Queue         json.RawMessage
	Payload       json.RawMessage
	Policy        json.RawMessage
	Upstreams     json.RawMessage
	UpstreamsMode json.RawMessage
	RateKey       json.RawMessage
	// Trigger asks for a refresh now, as in PutRequest.
	Trigger bool
	// IfMatch is PutRequest.IfMatch.
	IfMatch []string
}

// Model ids and queue names. An id may contain ':' (ids are never part of
// a queue key); a queue name may not, since it is part of Redis keys such
// as working:<queue>:<worker>, which a ':' would make ambiguous.
var (
	idPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$`)
	queuePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$`)
)

// Rules of ids and queue names, as errors state them.
const (
	IDRule    = "must be 1 to 200 letters, digits or ._:@- starting with a letter or digit"
	QueueRule = "must be 1 to 200 letters, digits or ._@- starting with a letter or digit"
)

// ValidID reports whether id is a valid model id: 1 to 200 ASCII letters,
// digits or ._:@-, starting with a letter or digit. So an id never holds a
// NUL, a byte that is not UTF-8, a space or a slash.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ValidQueue reports whether name is a valid queue name: as ValidID, but
// without ':'.
func ValidQueue(name string) bool { return queuePattern.MatchString(name) }

// DefaultQueue is the queue of a model that names none.
const DefaultQueue = "default"

// EffectiveLimits returns s.Limits with every zero field at its default.
func (s *Service) EffectiveLimits() Limits { return s.Limits.orDefault() }

// DefinitionTag returns an opaque tag of m's definition: its queue, payload,
// policy, upstreams and rate key. It changes when one of them does, and only then: the run
// state (refresh_at, attempts, pause...) changes all the time and is no
// part of it. The API serves it as the ETag of a model.
func DefinitionTag(m Model) string {
	def, err := json.Marshal(struct {
		Queue         string          `json:"queue"`
		Payload       json.RawMessage `json:"payload"`
		Policy        Policy          `json:"policy"`
		Upstreams     []string        `json:"upstreams,omitempty"`
		UpstreamsMode string          `json:"upstreams_mode,omitempty"`
		RateKey       string          `json:"rate_key,omitempty"`
	}{m.Queue, m.Payload, m.Policy, m.Upstreams, m.UpstreamsMode, m.RateKey})
	if err != nil { // a stored payload is valid JSON; hash its bytes anyway
		def = append([]byte(m.Queue+"\x00"), m.Payload...)
	}
	sum := sha256.Sum256(def)
	return hex.EncodeToString(sum[:16])
}

// Definition is what a PUT or PATCH writes: a model's queue, payload,
// policy, upstreams and rate key, checked.
type Definition struct {
	Queue         string
	Payload       json.RawMessage
	Policy        Policy
	Upstreams     []string
	UpstreamsMode string
	RateKey       string
}

// Put creates the model or replaces its whole definition: queue, payload,
// policy, upstreams and rate key. What the request leaves out takes its
// default (queue "default", no payload, the default policy, no upstreams,
// no rate key) whatever the model had; use
// Patch to change part of it. A new model gets its first plan (Create) and
// created is true. A replaced model is updated (Update): it keeps its
// state, its next run re-planned under the new schedule when it is idle,
// enabled and not in a retry round, but a disabled model whose definition
// changes is re-enabled and triggered. Trigger then refreshes it at once.
//
// Every broken rule is reported, each named by its field, at most
// Limits.MaxFieldErrors of them. A schedule that is set (on create, or
// changed) is also checked at the time of the request (Policy.CheckAt: an
// occurrence after now, occurrences at least Limits.MinInterval apart).
func (s *Service) Put(ctx context.Context, req PutRequest) (Model, bool, error) {
	def, err := s.check(req.ID, req.Queue, req.Payload, req.Policy, req.Upstreams, req.UpstreamsMode, req.RateKey)
	if err != nil {
		return Model{}, false, err
	}
	m, created, err := s.write(ctx, req.ID, false, req.IfMatch, req.IfNoneMatch, req.Trigger,
		func(*Model) (Definition, error) { return def, nil })
	if err != nil {
		return Model{}, false, fmt.Errorf("put model %s: %w", req.ID, err)
	}
	return m, created, nil
}

// Patch changes part of model id's definition (see PatchRequest) and
// returns the model after it. The merged definition is checked exactly as
// Put checks a request, and written as Put writes it, in one transaction
// with the read of the stored definition, so a concurrent write is never
// lost. An unknown model is an error with code ENOTFOUND.
func (s *Service) Patch(ctx context.Context, req PatchRequest) (Model, error) {
	lim := s.Limits.orDefault()
	var errs []FieldError
	if !ValidID(req.ID) {
		errs = append(errs, FieldError{Field: "id", Rule: IDRule})
	}
	for _, m := range []struct {
		name string
		v    json.RawMessage
	}{{"queue", req.Queue}, {"payload", req.Payload}, {"policy", req.Policy}, {"upstreams", req.Upstreams}, {"upstreams_mode", req.UpstreamsMode}, {"rate_key", req.RateKey}} {
		switch {
		case m.v == nil:
		case !json.Valid(m.v):
			errs = append(errs, FieldError{Field: m.name, Rule: "must be JSON"})
		case nestedDeeper(m.v, lim.MaxPayloadDepth):
			errs = append(errs, FieldError{Field: m.name, Rule: fmt.Sprintf("nested deeper than %d levels", lim.MaxPayloadDepth)})
		}
	}
	if len(errs) > 0 {
		return Model{}, &ValidationError{Fields: errs}
	}
	m, _, err := s.write(ctx, req.ID, true, req.IfMatch, nil, req.Trigger, func(old *Model) (Definition, error) {
		queue, payload := old.Queue, old.Payload
		policy, err := json.Marshal(old.Policy)
		if err != nil {
			return Definition{}, err
		}
		if req.Queue != nil {
			queue = DefaultQueue
			if !isNull(req.Queue) && json.Unmarshal(req.Queue, &queue) != nil {
				return Definition{}, &ValidationError{Fields: []FieldError{{Field: "queue", Rule: "must be a string, got " + shortJSON(req.Queue)}}}
			}
		}
		if req.Payload != nil {
			payload = nil
			if !isNull(req.Payload) {
				if payload, err = mergePatch(old.Payload, req.Payload); err != nil {
					return Definition{}, err
				}
			}
		}
		if req.Policy != nil {
			switch {
			case isNull(req.Policy):
				policy = []byte("{}")
			case !isObject(req.Policy):
				return Definition{}, &ValidationError{Fields: []FieldError{{Field: "policy", Rule: "must be an object, got " + shortJSON(req.Policy)}}}
			default:
				if policy, err = mergePatch(policy, req.Policy); err != nil {
					return Definition{}, err
				}
			}
		}
		upstreams, mode := old.Upstreams, old.UpstreamsMode
		if req.Upstreams != nil {
			upstreams = nil
			if !isNull(req.Upstreams) && json.Unmarshal(req.Upstreams, &upstreams) != nil {
				return Definition{}, &ValidationError{Fields: []FieldError{{Field: "upstreams", Rule: "must be an array of model ids, got " + shortJSON(req.Upstreams)}}}
			}
		}
		if req.UpstreamsMode != nil {
			mode = ""
			if !isNull(req.UpstreamsMode) && json.Unmarshal(req.UpstreamsMode, &mode) != nil {
				return Definition{}, &ValidationError{Fields: []FieldError{{Field: "upstreams_mode", Rule: "must be a string, got " + shortJSON(req.UpstreamsMode)}}}
			}
		}
		rateKey := old.RateKey
		if req.RateKey != nil {
			rateKey = ""
			if !isNull(req.RateKey) && json.Unmarshal(req.RateKey, &rateKey) != nil {
				return Definition{}, &ValidationError{Fields: []FieldError{{Field: "rate_key", Rule: "must be a string, got " + shortJSON(req.RateKey)}}}
			}
		}
		return s.check(req.ID, queue, payload, policy, upstreams, mode, rateKey)
	})
	if err != nil {
		return Model{}, fmt.Errorf("patch model %s: %w", req.ID, err)
	}
	return m, nil
}

// check checks a definition as a request states it and returns it parsed,
// or a *ValidationError listing at most Limits.MaxFieldErrors broken rules.
// An empty queue is the default queue, an empty or null payload none, an
// empty policy the default policy, an empty rate key none.
func (s *Service) check(id, queue string, payload, policy json.RawMessage, upstreams []string, mode, rateKey string) (Definition, error) {
	lim := s.Limits.orDefault()
	var errs []FieldError
	if !ValidID(id) {
		errs = append(errs, FieldError{Field: "id", Rule: IDRule})
	}
	if queue == "" {
		queue = DefaultQueue
	}
	if !ValidQueue(queue) {
		errs = append(errs, FieldError{Field: "queue", Rule: QueueRule})
	}
	if rateKey != "" && !ValidRateKey(rateKey) {
		errs = append(errs, FieldError{Field: "rate_key", Rule: RateKeyRule + ", got " + quoteShort(rateKey)})
	}
	if isNull(payload) {
		payload = nil
	}
	if f := checkPayload(payload, lim); f != nil {
		errs = append(errs, *f)
	}
	if len(policy) == 0 {
		policy = json.RawMessage("{}")
	}
	more := 0
	p, err := ParsePolicy(policy, lim)
	if err != nil {
		var v *ValidationError
		if !errors.As(err, &v) {
			return Definition{}, err
		}
		errs = append(errs, policyFields(v.Fields)...)
		more = v.More
	}
	if err := CheckUpstreams(id, upstreams, mode, 0); err != nil {
		var v *ValidationError
		if !errors.As(err, &v) {
			return Definition{}, err
		}
		errs = append(errs, v.Fields...)
	}
	if len(errs) > 0 {
		shown := min(len(errs), max(lim.MaxFieldErrors, 1))
		return Definition{}, &ValidationError{Fields: errs[:shown], More: more + len(errs) - shown}
	}
	if mode == UpstreamsAll || len(upstreams) == 0 {
		mode = "" // the default, stored as such
	}
	if len(upstreams) == 0 {
		upstreams = nil
	}
	return Definition{Queue: queue, Payload: payload, Policy: p, Upstreams: upstreams, UpstreamsMode: mode, RateKey: rateKey}, nil
}

// checkPayload returns the rule payload breaks, if any: it must be at most
// MaxPayloadBytes of UTF-8 JSON nested at most MaxPayloadDepth deep. A
// \u0000 escape is allowed: the payload is stored as written (PostgreSQL
// json keeps it as text) and handed to workers unchanged.
func checkPayload(payload json.RawMessage, lim Limits) *FieldError {
	rule := ""
	switch {
	case payload == nil:
	case len(payload) > lim.MaxPayloadBytes:
		rule = fmt.Sprintf("must be at most %d bytes, got %d", lim.MaxPayloadBytes, len(payload))
	case !utf8.Valid(payload):
		rule = "must be UTF-8"
	case !json.Valid(payload):
		rule = "must be JSON"
	case nestedDeeper(payload, lim.MaxPayloadDepth):
		rule = fmt.Sprintf("nested deeper than %d levels", lim.MaxPayloadDepth)
	}
	if rule == "" {
		return nil
	}
	return &FieldError{Field: "payload", Rule: rule}
}

// policyFields names fields of a policy as fields of the request body.
func policyFields(fields []FieldError) []FieldError {
	out := make([]FieldError, len(fields))
	for i, f := range fields {
		f.Field = strings.TrimSuffix("policy."+f.Field, ".")
		out[i] = f
	}
	return out
}

// write runs one Put or Patch of model id in one store transaction: it
// checks the preconditions on the stored model, takes the definition from
// build (old is nil for a model that does not exist) and writes it. With
// mustExist, an unknown model is ENOTFOUND (before any precondition).
func (s *Service) write(ctx context.Context, id string, mustExist bool, ifMatch, ifNoneMatch []string, trigger bool,
	build func(old *Model) (Definition, error)) (Model, bool, error) {
	var out Model
	var created bool
	var ch changes
	err := s.Store.Modify(ctx, []string{id}, func(found []Model) (Batch, error) {
		// The clock is read once the model is locked: a write that waited
		// for the lock must not date itself before what the holder wrote.
		now := s.Clock.Now()
		ch = changes{}
		var old *Model
		if len(found) > 0 {
			old = &found[0]
		}
		if old == nil && mustExist {
			return Batch{}, Errorf(ENOTFOUND, "model %q not found", id)
		}
		if err := precondition(id, old, ifMatch, ifNoneMatch); err != nil {
			return Batch{}, err
		}
		def, err := build(old)
		if err != nil {
			return Batch{}, err
		}
		created = old == nil
		createdAt := now
		if !created {
			createdAt = old.CreatedAt
		}
		if created || old.Policy.Schedule != def.Policy.Schedule || old.Policy.Timezone != def.Policy.Timezone || old.Policy.Spread != def.Policy.Spread {
			if err := def.Policy.CheckAt(now, createdAt, s.EffectiveLimits()); err != nil {
				var v *ValidationError
				if errors.As(err, &v) {
					return Batch{}, &ValidationError{Fields: policyFields(v.Fields), More: v.More}
				}
				return Batch{}, err
			}
		}
		var m Model
		var d Decision
		if created {
			m, d = Create(Model{ID: id, Queue: def.Queue, Upstreams: def.Upstreams, UpstreamsMode: def.UpstreamsMode,
				RateKey: def.RateKey, Payload: def.Payload, Policy: def.Policy}, trigger, now)
			ch.add(Model{ID: id}, m, d, now)
		} else {
			m, d = Update(*old, def, trigger, now)
			if d.Event != "" {
				ch.add(*old, m, d, now)
			} else {
				ch.put(Change{Model: m})
			}
		}
		if e, ok := auditEntry(ctx, id, writeAction(created, mustExist), now); ok {
			var before Model
			if old != nil {
				before = *old
			}
			// A write that re-enables a disabled model triggers it too.
			e.Changes, e.Trigger = DefinitionChanges(before, m), trigger || d.Event == EventUpdate
			if created || e.Trigger || len(e.Changes) > 0 { // a write that changes nothing is no news
				ch.Audit = append(ch.Audit, e)
			}
		}
		out = m
		return ch.Batch, nil
	})
	if err != nil {
		return Model{}, false, err
	}
	s.committed(ch.Events, true)
	return out, created, nil
}

// precondition checks the stored model old (nil if none) against the tags
// of a write's IfMatch and IfNoneMatch.
func precondition(id string, old *Model, ifMatch, ifNoneMatch []string) error {
	if len(ifMatch) > 0 {
		if old == nil {
			return Errorf(EPRECONDITION, "model %q does not exist", id)
		}
		if tag := DefinitionTag(*old); !slices.Contains(ifMatch, "*") && !slices.Contains(ifMatch, tag) {
			return Errorf(EPRECONDITION, "model %q has changed: its definition tag is now %q", id, tag)
		}
	}
	if len(ifNoneMatch) > 0 && old != nil {
		if slices.Contains(ifNoneMatch, "*") {
			return Errorf(EPRECONDITION, "model %q already exists", id)
		}
		if tag := DefinitionTag(*old); slices.Contains(ifNoneMatch, tag) {
			return Errorf(EPRECONDITION, "model %q has the definition tag %q", id, tag)
		}
	}
	return nil
}

// Act applies an action (trigger, enable, pause, resume, cancel) to model
// id and returns the model after it with the decision. An action that
// changes nothing (Decision.Unchanged) writes and publishes nothing.
func (s *Service) Act(ctx context.Context, id, action string) (Model, Decision, error) {
	if !ValidID(id) {
		return Model{}, Decision{}, &ValidationError{Fields: []FieldError{{Field: "id", Rule: IDRule}}}
	}
	apply, err := actionFunc(action, "")
	if err != nil {
		return Model{}, Decision{}, err
	}
	return s.act(ctx, id, action, apply, false)
}

// act applies action to model id with apply in one transaction; bulk
// marks its audit entry as one model of a bulk action.
func (s *Service) act(ctx context.Context, id, action string, apply func(Model, time.Time) (Model, Decision), bulk bool) (Model, Decision, error) {
	var out Model
	var dec Decision
	var ch changes
	err := s.Store.Modify(ctx, []string{id}, func(found []Model) (Batch, error) {
		if len(found) == 0 {
			return Batch{}, Errorf(ENOTFOUND, "model %q not found", id)
		}
		now := s.Clock.Now() // once locked, as in write
		ch = changes{}
		out, dec = apply(found[0], now)
		ch.add(found[0], out, dec, now)
		if e, ok := auditEntry(ctx, id, action, now); ok && !dec.Unchanged {
			e.Bulk = bulk
			ch.Audit = append(ch.Audit, e)
		}
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
	if !ValidID(id) {
		return &ValidationError{Fields: []FieldError{{Field: "id", Rule: IDRule}}}
	}
	var ch changes
	err := s.Store.Modify(ctx, []string{id}, func(found []Model) (Batch, error) {
		if len(found) == 0 {
			return Batch{}, Errorf(ENOTFOUND, "model %q not found", id)
		}
		now := s.Clock.Now() // once locked, as in write
		ch = changes{}
		m, d := Delete(found[0])
		ch.add(found[0], m, d, now)
		ch.Changes[len(ch.Changes)-1].Delete = true
		if e, ok := auditEntry(ctx, id, AuditDelete, now); ok {
			ch.Audit = append(ch.Audit, e)
		}
		return ch.Batch, nil
	})
	if err != nil {
		return fmt.Errorf("delete model %s: %w", id, err)
	}
	s.committed(ch.Events, false)
	return nil
}

// WakeScheduler wakes the scheduler, if WakeFunc is set: a change outside
// the models (a concurrency limit) may let models start.
func (s *Service) WakeScheduler() {
	if s.WakeFunc != nil {
		s.WakeFunc()
	}
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

// nestedDeeper reports whether the JSON text data nests arrays and objects
// more than max levels deep. It reads data once, left to right, and stops
// at the first level too deep.
func nestedDeeper(data []byte, max int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// isObject reports whether the JSON value v is an object.
func isObject(v json.RawMessage) bool { return bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) }

// mergePatch applies the JSON merge patch patch (RFC 7396) to the JSON
// value target (nil: none) and returns the result. A patch that is no
// object replaces the target; an object patch merges into the target
// (an object, or {} if it is none) member by member, null removing a
// member. Members keep their order, new ones follow, and the values the
// patch does not touch keep their bytes. Its work is the size of target
// and patch times the patch's depth.
func mergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	if !isObject(patch) {
		return patch, nil
	}
	var names []string
	values := map[string]json.RawMessage{}
	if isObject(target) {
		err := eachMember(target, func(name string, v json.RawMessage) {
			if _, ok := values[name]; !ok {
				names = append(names, name)
			}
			values[name] = v
		})
		if err != nil {
			return nil, err
		}
	}
	var merr error
	err := eachMember(patch, func(name string, v json.RawMessage) {
		if merr != nil {
			return
		}
		if isNull(v) {
			delete(values, name)
			return
		}
		cur, ok := values[name]
		if !ok {
			names = append(names, name)
		}
		values[name], merr = mergePatch(cur, v)
	})
	if err == nil {
		err = merr
	}
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	out := []byte{'{'}
	for _, name := range names {
		v, ok := values[name]
		if !ok {
			continue // removed
		}
		delete(values, name) // a name removed and added again is listed twice
		if len(out) > 1 {
			out = append(out, ',')
		}
		b.Reset()
		_ = enc.Encode(name) // a string always encodes
		out = append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
		out = append(out, ':')
		out = append(out, bytes.TrimSpace(v)...)
	}
	return append(out, '}'), nil
}

// eachMember calls fn with the name and value of each member of the JSON
// object data, in order.
func eachMember(data json.RawMessage, fn func(name string, v json.RawMessage)) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		fn(tok.(string), v)
	}
	return nil
}
