package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/freshen-dev/freshen/refresh"
)

// maxBodyBytes bounds a request body.
const maxBodyBytes = 1 << 20

// List limits.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
	defaultAttempts  = 20
	maxAttemptsLimit = 1000
)

// handlePut creates or replaces a model: 201 with a Location header when
// created, 200 when replaced. The body is {"queue", "payload", "policy",
// "trigger"}, every member optional; an "id" member must equal the path's.
func (s *Server) handlePut(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	req, err := decodePut(http.MaxBytesReader(w, r.Body, maxBodyBytes), id)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	m, created, err := s.svc.Put(r.Context(), req)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		w.Header().Set("Location", "/models/"+url.PathEscape(id))
	}
	writeJSON(w, code, withNextRuns(m, s.svc.Clock.Now()))
}

// decodePut reads a PUT body. Its errors are *refresh.ValidationError
// naming the member at fault ("body" for the body as a whole), or the
// reader's error.
func decodePut(body io.Reader, id string) (refresh.PutRequest, error) {
	req := refresh.PutRequest{ID: id}
	data, err := io.ReadAll(body)
	if err != nil {
		return req, fmt.Errorf("read body: %w", err)
	}
	invalid := func(field, format string, args ...any) error {
		return &refresh.ValidationError{Fields: []refresh.FieldError{{Field: field, Rule: fmt.Sprintf(format, args...)}}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, invalid("body", `is empty; send a JSON object such as {"policy": {}}`)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return req, invalid("body", "invalid JSON at byte %d: %s", syntax.Offset, syntax)
		}
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) || members == nil {
			return req, invalid("body", "must be a JSON object")
		}
		return req, invalid("body", "invalid JSON: %s", err)
	}
	if members == nil { // null
		return req, invalid("body", "must be a JSON object")
	}
	var fields []refresh.FieldError
	bad := func(field, rule string) { fields = append(fields, refresh.FieldError{Field: field, Rule: rule}) }
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := members[name]
		null := string(bytes.TrimSpace(v)) == "null"
		switch name {
		case "id":
			var got string
			if err := json.Unmarshal(v, &got); err != nil || got != id {
				bad("id", fmt.Sprintf("must be the id of the path, %q, or left out", id))
			}
		case "queue":
			if !null && json.Unmarshal(v, &req.Queue) != nil {
				bad("queue", "must be a string")
			}
		case "payload":
			if !null {
				req.Payload = v
			}
		case "policy":
			switch {
			case null:
			case !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")):
				bad("policy", "must be a JSON object, got "+short(v))
			default:
				req.Policy = v
			}
		case "trigger":
			if !null && json.Unmarshal(v, &req.Trigger) != nil {
				bad("trigger", "must be true or false")
			}
		default:
			bad(name, "unknown field; want queue, payload, policy or trigger")
		}
	}
	if len(fields) > 0 {
		return req, &refresh.ValidationError{Fields: fields}
	}
	return req, nil
}

// handleGet returns a model with its next planned runs.
func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	m, err := s.svc.Store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, withNextRuns(m, s.svc.Clock.Now()))
}

// listResponse is the body of GET /models. Next is the cursor of the next
// page (pass it as after=), "" on the last page.
type listResponse struct {
	Models []Model `json:"models"`
	Next   string  `json:"next"`
}

// listParams are the query parameters of GET /models.
var listParams = []string{"disabled", "failing", "running", "paused", "queue", "after", "limit"}

// handleList lists models in id order, one page at a time.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	limit := f.Limit
	f.Limit++ // one more tells whether a next page exists
	models, err := s.svc.Store.List(r.Context(), f)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res := listResponse{Models: make([]Model, 0, min(len(models), limit))}
	if len(models) > limit {
		models = models[:limit]
		res.Next = models[limit-1].ID
	}
	for _, m := range models {
		res.Models = append(res.Models, newModel(m))
	}
	writeJSON(w, http.StatusOK, res)
}

// parseFilter reads the query of GET /models. Unknown parameters are
// refused, so that a misspelt filter does not silently list everything.
func parseFilter(q url.Values) (refresh.Filter, error) {
	f := refresh.Filter{Limit: defaultListLimit}
	var fields []refresh.FieldError
	bad := func(field, format string, args ...any) {
		fields = append(fields, refresh.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vals := q[name]
		if !slices.Contains(listParams, name) {
			bad(name, "unknown parameter; want one of disabled, failing, running, paused, queue, after, limit")
			continue
		}
		if len(vals) > 1 {
			bad(name, "must be given once")
			continue
		}
		v := vals[0]
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
			f.Queue = v
		case "after":
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

// actResponse is the body of POST /models/{id}/{action}.
type actResponse struct {
	Model    ModelWithRuns `json:"model"`
	Decision Decision      `json:"decision"`
}

// handleAct applies action to a model and returns it with the decision.
func (s *Server) handleAct(w http.ResponseWriter, r *http.Request, action string) {
	m, d, err := s.svc.Act(r.Context(), r.PathValue("id"), action)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, actResponse{
		Model:    withNextRuns(m, s.svc.Clock.Now()),
		Decision: Decision{Event: d.Event, Rule: d.Rule, Why: d.Why},
	})
}

// handleDelete removes a model and its history: 204.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// attemptsResponse is the body of GET /models/{id}/attempts.
type attemptsResponse struct {
	Attempts []Attempt `json:"attempts"`
}

// handleAttempts returns a model's attempts, newest first, at most limit
// (default 20).
func (s *Server) handleAttempts(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	limit := defaultAttempts
	q := r.URL.Query()
	for name := range q {
		if name != "limit" {
			s.Error(w, r, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: name, Rule: "unknown parameter; want limit"}}})
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAttemptsLimit {
			s.Error(w, r, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "limit",
				Rule: fmt.Sprintf("must be an integer between 1 and %d, got %q", maxAttemptsLimit, v)}}})
			return
		}
		limit = n
	}
	// Not every store reports an unknown model from History.
	if _, err := s.svc.Store.Get(r.Context(), id); err != nil {
		s.Error(w, r, err)
		return
	}
	list, err := s.svc.Store.History(r.Context(), id, limit)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res := attemptsResponse{Attempts: make([]Attempt, 0, len(list))}
	for _, a := range list {
		res.Attempts = append(res.Attempts, newAttempt(a))
	}
	writeJSON(w, http.StatusOK, res)
}

// short returns JSON value v for an error message, cut at 40 bytes.
func short(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
