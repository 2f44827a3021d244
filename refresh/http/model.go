package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// List limits.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
	defaultAttempts  = 20
	maxAttemptsLimit = 1000
)

// setETag sets the ETag header of a response about m: its definition tag.
func setETag(w http.ResponseWriter, m refresh.Model) {
	w.Header().Set("ETag", `"`+refresh.DefinitionTag(m)+`"`)
}

// handlePut creates or replaces a whole model: 201 with a Location header
// when created, 200 when replaced, with the model's ETag.
func (s *Server) handlePut(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := query(r); err != nil {
		s.Error(w, r, err)
		return
	}
	ifMatch, err := entityTags(r.Header, "If-Match")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	ifNoneMatch, err := entityTags(r.Header, "If-None-Match")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	b, err := s.decodeModel(w, r, id, http.MethodPut)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	req := refresh.PutRequest{ID: id, Trigger: b.trigger, IfMatch: ifMatch, IfNoneMatch: ifNoneMatch}
	if b.queue != nil && !isNull(b.queue) {
		_ = json.Unmarshal(b.queue, &req.Queue) // checked by decodeModel
	}
	if !isNull(b.payload) {
		req.Payload = b.payload
	}
	if !isNull(b.policy) {
		req.Policy = b.policy
	}
	if !isNull(b.upstreams) {
		_ = json.Unmarshal(b.upstreams, &req.Upstreams) // checked by decodeModel
	}
	if !isNull(b.upstreamsMode) {
		_ = json.Unmarshal(b.upstreamsMode, &req.UpstreamsMode)
	}
	if !isNull(b.rateKey) {
		_ = json.Unmarshal(b.rateKey, &req.RateKey) // checked by decodeModel
	}
	if err := upstreamsOwned(r, req.Upstreams); err != nil {
		s.Error(w, r, err)
		return
	}
	m, created, err := s.svc.Put(auditContext(r, b.reason), req)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		w.Header().Set("Location", "/models/"+url.PathEscape(id))
	}
	setETag(w, m)
	s.writeModel(w, r, code, m)
}

// handlePatch changes part of a model with a JSON merge patch: 200 with
// the model and its ETag.
func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := query(r); err != nil {
		s.Error(w, r, err)
		return
	}
	ifMatch, err := entityTags(r.Header, "If-Match")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if r.Header.Get("If-None-Match") != "" {
		s.Error(w, r, invalid("If-None-Match", "is not taken by PATCH, which never creates; use If-Match"))
		return
	}
	b, err := s.decodeModel(w, r, id, http.MethodPatch)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	var ups []string
	if !isNull(b.upstreams) {
		_ = json.Unmarshal(b.upstreams, &ups) // checked by decodeModel
	}
	if err := upstreamsOwned(r, ups); err != nil {
		s.Error(w, r, err)
		return
	}
	m, err := s.svc.Patch(auditContext(r, b.reason), refresh.PatchRequest{
		ID: id, Queue: b.queue, Payload: b.payload, Policy: b.policy, Trigger: b.trigger, IfMatch: ifMatch,
		Upstreams: b.upstreams, UpstreamsMode: b.upstreamsMode, RateKey: b.rateKey,
	})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	setETag(w, m)
	s.writeModel(w, r, http.StatusOK, m)
}

// handleGet returns a model with its next planned runs.
func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		_, err = query(r)
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	m, err := s.svc.Store.Get(r.Context(), id)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	setETag(w, m)
	s.writeModel(w, r, http.StatusOK, m)
}

// ModelList is the body of GET /models. Next is the cursor of the next
// page (pass it as after=), "" on the last page.
type ModelList struct {
	Models []Model `json:"models"`
	Next   string  `json:"next"`
}

// listParams are the query parameters of GET /models.
var listParams = []string{"disabled", "failing", "running", "paused", "queue", "after", "limit"}

// handleList lists models in id order, one page at a time.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, listParams...)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	f, err := parseFilter(q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if p, ok := PrincipalFrom(r.Context()); ok {
		f.Prefix = p.Prefix // the store reads the token's range only
	}
	if !reserve(w, listReserve) {
		return
	}
	models, next, err := s.listPage(r.Context(), f)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res := ModelList{Models: make([]Model, 0, len(models)), Next: next}
	for _, m := range models {
		res.Models = append(res.Models, newModel(m))
	}
	writeJSON(w, http.StatusOK, res)
}

// listReserve is what a page of models reserves of the budget of large
// answers while it is read and encoded: its payloads, up to
// refresh.BatchPayloadBytes, and their copy in the answer.
const listReserve = 2 * refresh.BatchPayloadBytes

// listPage returns a page of the models f selects and the cursor of the
// next page ("" on the last one), in one read of the store: f.Limit
// models and one more, which tells whether a next page exists. A page
// holds at most refresh.BatchPayloadBytes of payloads (and always one
// model): models with large payloads end it early, with a cursor after its
// last. The cursor is always the id of the page's last model, so within
// f.Prefix.
func (s *Server) listPage(ctx context.Context, f refresh.Filter) ([]refresh.Model, string, error) {
	limit := f.Limit
	f.Limit++
	f.BoundPayloads = true
	models, err := s.svc.Store.List(ctx, f)
	if err != nil {
		return nil, "", err
	}
	budget := refresh.NewPayloadBudget()
	for i, m := range models {
		if i == limit || !budget.Take(len(m.Payload)) {
			return models[:i], models[i-1].ID, nil
		}
	}
	return models, "", nil
}

// parseFilter reads the filter of GET /models from q, whose parameters are
// known and given once (see query).
func parseFilter(q url.Values) (refresh.Filter, error) {
	f := refresh.Filter{Limit: defaultListLimit}
	var fields []refresh.FieldError
	bad := func(field, format string, args ...any) {
		fields = append(fields, refresh.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	for _, name := range listParams {
		if !q.Has(name) {
			continue
		}
		v := q.Get(name)
		switch name {
		case "disabled", "failing", "running", "paused":
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad(name, "must be true or false, got %q", v)
				continue
			}
			switch name {
			case "disabled":
				f.Disabled = &b
			case "failing":
				f.Failing = &b
			case "running":
				f.Running = &b
			case "paused":
				f.Paused = &b
			}
		case "queue":
			if !refresh.ValidQueue(v) {
				bad(name, "%s", refresh.QueueRule)
				continue
			}
			f.Queue = v
		case "after":
			if !refresh.ValidID(v) {
				bad(name, "must be a model id: %s", refresh.IDRule)
				continue
			}
			f.After = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxListLimit {
				bad(name, "must be an integer between 1 and %d, got %q", maxListLimit, v)
				continue
			}
			f.Limit = n
		}
	}
	if len(fields) > 0 {
		return f, &refresh.ValidationError{Fields: fields}
	}
	return f, nil
}

// ActResult is the body of POST /models/{id}/{action}. Changed is false
// when the action changed nothing (enable on a model that is not disabled,
// pause on a paused one...).
type ActResult struct {
	Model    ModelWithRuns `json:"model"`
	Decision Decision      `json:"decision"`
	Changed  bool          `json:"changed"`
}

// handleAct applies action to a model and returns it with the decision.
func (s *Server) handleAct(w http.ResponseWriter, r *http.Request, action string) {
	id, err := pathID(r)
	if err == nil {
		_, err = query(r)
	}
	var reason string
	if err == nil {
		reason, err = s.decodeReason(w, r)
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	m, d, err := s.svc.Act(auditContext(r, reason), id, action)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ActResult{
		Model:    withNextRuns(m, s.svc.Clock.Now()),
		Decision: Decision{Event: d.Event, Rule: d.Rule, Why: d.Why},
		Changed:  !d.Unchanged,
	})
}

// handleDelete removes a model and its history: 204.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		_, err = query(r)
	}
	var reason string
	if err == nil {
		reason, err = s.decodeReason(w, r)
	}
	if err == nil {
		err = s.svc.Delete(auditContext(r, reason), id)
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// AttemptList is the body of GET /models/{id}/attempts.
type AttemptList struct {
	Attempts []Attempt `json:"attempts"`
	// Next is the before of the next page (the start of the last attempt
	// of this one, to the nanosecond), "" on the last page.
	Next string `json:"next"`
}

// handleAttempts returns a model's attempts that started before ?before=
// (an RFC 3339 time, the Next of the previous page), newest first, at most
// limit (default 20).
func (s *Server) handleAttempts(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	q, err := query(r, "limit", "before")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	var before time.Time
	if q.Has("before") {
		v := q.Get("before")
		if before, err = time.Parse(time.RFC3339Nano, v); err != nil {
			s.Error(w, r, invalid("before", "must be an RFC 3339 time such as 2026-03-02T06:00:00.123456Z (the next of the previous page), got %q", v))
			return
		}
	}
	limit := defaultAttempts
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAttemptsLimit {
			s.Error(w, r, invalid("limit", "must be an integer between 1 and %d, got %q", maxAttemptsLimit, v))
			return
		}
		limit = n
	}
	// Not every store reports an unknown model from History.
	if _, err := s.svc.Store.Get(r.Context(), id); err != nil {
		s.Error(w, r, err)
		return
	}
	list, err := s.svc.Store.History(r.Context(), id, before, limit)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res := AttemptList{Attempts: make([]Attempt, 0, len(list))}
	for _, a := range list {
		res.Attempts = append(res.Attempts, newAttempt(a))
	}
	if len(list) == limit {
		res.Next = list[len(list)-1].StartedAt.UTC().Format(time.RFC3339Nano)
	}
	writeJSON(w, http.StatusOK, res)
}

// upstreamsOwned refuses upstreams outside the id prefix of the caller's
// token: a token limited to a prefix may only name
// upstreams inside it.
func upstreamsOwned(r *http.Request, upstreams []string) error {
	p, ok := PrincipalFrom(r.Context())
	if !ok || p.Prefix == "" {
		return nil
	}
	var fields []refresh.FieldError
	for i, u := range upstreams {
		if !p.Owns(u) {
			fields = append(fields, refresh.FieldError{Field: fmt.Sprintf("upstreams[%d]", i),
				Rule: fmt.Sprintf("must start with %q, the id prefix of token %q, got %q", p.Prefix, p.Name, u)})
		}
	}
	if len(fields) > 0 {
		return &refresh.ValidationError{Fields: fields}
	}
	return nil
}

// writeModel answers with m, its next runs and, if it has upstreams, their
// status, read from the store.
func (s *Server) writeModel(w http.ResponseWriter, r *http.Request, code int, m refresh.Model) {
	v := withNextRuns(m, s.svc.Clock.Now())
	if len(m.Upstreams) > 0 {
		ups, err := s.svc.Store.Upstreams(r.Context(), m.Upstreams)
		if err != nil {
			s.Error(w, r, err)
			return
		}
		v = withUpstreams(v, m, ups)
	}
	writeJSON(w, code, v)
}
