package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/freshen-dev/freshen/refresh"
)

// DeadLetters is the dead-letter list as the API reaches it; queue.Redis
// implements it.
type DeadLetters interface {
	// DeadLetters returns up to limit entries, newest first, after the
	// cursor after ("" for the first page), and the next page's cursor
	// ("" on the last page). A cursor it cannot read is an EINVALID
	// error naming "after".
	DeadLetters(ctx context.Context, after string, limit int) ([]refresh.DeadLetter, string, error)
	// RequeueDead puts the entries with ids back on the lists they came
	// from; RequeueAllDead does so with every entry.
	RequeueDead(ctx context.Context, ids []string) (refresh.DeadResult, error)
	RequeueAllDead(ctx context.Context) (refresh.DeadResult, error)
	// DropDead removes the entries with ids; DropAllDead every entry.
	DropDead(ctx context.Context, ids []string) (refresh.DeadResult, error)
	DropAllDead(ctx context.Context) (refresh.DeadResult, error)
}

// Bounds of the dead-letter routes.
const (
	defaultDeadLimit = 100
	maxDeadLimit     = 1000
	maxDeadIDs       = 1000
	maxDeadIDLen     = 64
)

// DeadLetter is the JSON of a dead-letter entry.
type DeadLetter struct {
	ID      string `json:"id"`
	At      Time   `json:"at"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// List is the list a requeue puts the message back on ("outcomes",
	// "jobs:<queue>"), null when it cannot be requeued; Refusal then says
	// why.
	List    nullString `json:"list"`
	Refusal string     `json:"refusal,omitempty"`
}

// DeadList is the body of GET /dead. Next is the cursor of the next page
// (pass it as after=), "" on the last page.
type DeadList struct {
	Dead []DeadLetter `json:"dead"`
	Next string       `json:"next"`
}

// DeadRefusal is a dead letter a requeue left on the list, and why.
type DeadRefusal struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// RequeueResult is the body of POST /dead/requeue. Missing are the ids
// asked for that the list does not hold (never there, or handled
// meanwhile).
type RequeueResult struct {
	Requeued int           `json:"requeued"`
	Missing  []string      `json:"missing"`
	Refused  []DeadRefusal `json:"refused"`
}

// DropResult is the body of POST /dead/drop.
type DropResult struct {
	Dropped int      `json:"dropped"`
	Missing []string `json:"missing"`
}

// handleDeadList lists dead letters, newest first, one page at a time.
func (s *Server) handleDeadList(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "after", "limit")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	limit := defaultDeadLimit
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeadLimit {
			s.Error(w, r, invalid("limit", "must be an integer between 1 and %d, got %q", maxDeadLimit, v))
			return
		}
		limit = n
	}
	letters, next, err := s.dead.DeadLetters(r.Context(), q.Get("after"), limit)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res := DeadList{Dead: make([]DeadLetter, 0, len(letters)), Next: next}
	for _, d := range letters {
		res.Dead = append(res.Dead, DeadLetter{ID: d.ID, At: Time(d.At), Reason: d.Reason, Message: d.Message,
			List: nullString(d.List), Refusal: d.Refusal})
	}
	writeJSON(w, http.StatusOK, res)
}

// handleRequeue requeues dead letters by id, or all of them.
func (s *Server) handleRequeue(w http.ResponseWriter, r *http.Request) {
	res, ok := s.deadAction(w, r, s.dead.RequeueDead, s.dead.RequeueAllDead)
	if !ok {
		return
	}
	out := RequeueResult{Requeued: res.Done, Missing: orEmpty(res.Missing), Refused: []DeadRefusal{}}
	for _, f := range res.Refused {
		out.Refused = append(out.Refused, DeadRefusal{ID: f.ID, Reason: f.Reason})
	}
	writeJSON(w, http.StatusOK, out)
}

// handleDrop drops dead letters by id, or all of them.
func (s *Server) handleDrop(w http.ResponseWriter, r *http.Request) {
	res, ok := s.deadAction(w, r, s.dead.DropDead, s.dead.DropAllDead)
	if ok {
		writeJSON(w, http.StatusOK, DropResult{Dropped: res.Done, Missing: orEmpty(res.Missing)})
	}
}

// deadAction reads the selection of a requeue or a drop
// (decodeDeadSelection) and applies byID to the ids, or every to all the
// dead letters. It answers the error itself, and then returns false.
func (s *Server) deadAction(w http.ResponseWriter, r *http.Request,
	byID func(context.Context, []string) (refresh.DeadResult, error),
	every func(context.Context) (refresh.DeadResult, error)) (refresh.DeadResult, bool) {
	ids, all, err := s.decodeDeadSelection(w, r)
	var res refresh.DeadResult
	switch {
	case err != nil:
	case all:
		res, err = every(r.Context())
	default:
		res, err = byID(r.Context(), ids)
	}
	if err != nil {
		s.Error(w, r, err)
		return res, false
	}
	return res, true
}

// handleDropOne drops one dead letter: 204, or 404 when the list does not
// hold it.
func (s *Server) handleDropOne(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := checkDeadID("id", id)
	if err == nil {
		_, err = query(r)
	}
	if err == nil {
		err = s.decodeEmpty(w, r)
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res, err := s.dead.DropDead(r.Context(), []string{id})
	if err == nil && res.Done == 0 {
		err = refresh.Errorf(refresh.ENOTFOUND, "no dead letter %s", id)
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeDeadSelection reads the body of a requeue or a drop: {"ids":
// [...]} with 1 to maxDeadIDs ids, or {"all": true}.
func (s *Server) decodeDeadSelection(w http.ResponseWriter, r *http.Request) (ids []string, all bool, err error) {
	if _, err := query(r); err != nil {
		return nil, false, err
	}
	data, err := readBody(w, r)
	if err != nil {
		return nil, false, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false, invalid("body", `is empty; send {"ids": ["..."]} or {"all": true}`)
	}
	var given bool
	err = decodeObject(r.Context(), data, s.svc.EffectiveLimits().MaxFieldErrors, func(name string, v json.RawMessage) string {
		switch name {
		case "ids":
			given = true
			if json.Unmarshal(v, &ids) != nil || ids == nil {
				return "must be a list of dead-letter ids, got " + short(v)
			}
			if len(ids) < 1 || len(ids) > maxDeadIDs {
				return fmt.Sprintf("must list 1 to %d ids, got %d", maxDeadIDs, len(ids))
			}
		case "all":
			if json.Unmarshal(v, &all) != nil || !all {
				return "must be true (or left out, with ids), got " + short(v)
			}
		default:
			return "unknown field; want ids or all"
		}
		return ""
	})
	switch {
	case err != nil:
		return nil, false, err
	case given && all:
		return nil, false, invalid("body", "must have ids or all, not both")
	case !given && !all:
		return nil, false, invalid("body", `must have ids or "all": true`)
	}
	var fields []refresh.FieldError
	for i, id := range ids {
		if checkDeadID("", id) != nil && len(fields) < max(s.svc.EffectiveLimits().MaxFieldErrors, 1) {
			fields = append(fields, refresh.FieldError{Field: fmt.Sprintf("ids[%d]", i), Rule: deadIDRule})
		}
	}
	if len(fields) > 0 {
		return nil, false, &refresh.ValidationError{Fields: fields}
	}
	return ids, all, nil
}

// deadIDRule is the rule of a dead-letter id.
const deadIDRule = "must be a dead-letter id: hex digits, as GET /dead shows"

// checkDeadID returns an error naming field if id is no dead-letter id.
func checkDeadID(field, id string) error {
	ok := id != "" && len(id) <= maxDeadIDLen
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
	}
	if !ok {
		return invalid(field, "%s", deadIDRule)
	}
	return nil
}

// orEmpty returns s, or an empty slice for nil, so JSON shows [].
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
