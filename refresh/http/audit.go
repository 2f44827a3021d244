package http

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/freshen-dev/freshen/refresh"
)

// Bounds of GET /models/{id}/audit.
const (
	defaultAuditLimit = 20
	maxAuditLimit     = 1000
)

// AuditEntry is the JSON of one audited write of a model.
type AuditEntry struct {
	ID int64 `json:"id"`
	At Time  `json:"at"`
	// Actor is the name of the token that wrote, "anonymous" on a server
	// without tokens.
	Actor string `json:"actor"`
	// Action is create, replace, patch, delete, trigger, enable, pause,
	// resume or cancel.
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	// Bulk marks an action applied by a bulk action.
	Bulk bool `json:"bulk,omitempty"`
	// Trigger marks a create, replace or patch with trigger: true.
	Trigger bool                  `json:"trigger,omitempty"`
	Changes []refresh.FieldChange `json:"changes,omitempty"`
}

func newAuditEntry(e refresh.AuditEntry) AuditEntry {
	return AuditEntry{ID: e.ID, At: Time(e.At), Actor: e.Actor, Action: e.Action, Reason: e.Reason,
		Bulk: e.Bulk, Trigger: e.Trigger, Changes: e.Changes}
}

// AuditList is the body of GET /models/{id}/audit. Next is the cursor of
// the next page (pass it as after=), "" on the last page.
type AuditList struct {
	Audit []AuditEntry `json:"audit"`
	Next  string       `json:"next"`
}

// auditContext returns r's context carrying who writes (the token's name,
// refresh.AuditAnonymous without tokens) and reason, so that the service
// audits the write.
func auditContext(r *http.Request, reason string) context.Context {
	actor := refresh.AuditAnonymous
	if p, ok := PrincipalFrom(r.Context()); ok {
		actor = p.Name
	}
	return refresh.WithAudit(r.Context(), refresh.AuditInfo{Actor: actor, Reason: reason})
}

// reasonRule returns the reason the JSON value v of a reason member gives
// (null: none) and the rule it breaks, or "".
func reasonRule(v json.RawMessage) (string, string) {
	if isNull(v) {
		return "", ""
	}
	var reason string
	if json.Unmarshal(v, &reason) != nil {
		return "", "must be a string, got " + short(v)
	}
	return reason, refresh.CheckReason(reason)
}

// decodeReason reads the body of an action or a DELETE: empty, or an
// object whose only member may be reason (a string of at most
// refresh.MaxAuditReasonBytes, or null).
func (s *Server) decodeReason(w http.ResponseWriter, r *http.Request) (string, error) {
	data, err := readBody(w, r)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return "", err
	}
	var reason string
	err = decodeObject(r.Context(), data, s.svc.EffectiveLimits().MaxFieldErrors, func(name string, v json.RawMessage) string {
		if name != "reason" {
			return "unknown field; this request takes an empty body or {\"reason\": \"...\"}"
		}
		var rule string
		reason, rule = reasonRule(v)
		return rule
	})
	return reason, err
}

// handleAudit returns a model's audit entries, newest first, one page at
// a time: at most limit (default 20), after the cursor after. The entries
// outlive the model; an id that has neither a model nor entries is 404.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	q, err := query(r, "after", "limit")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	limit := defaultAuditLimit
	var fields []refresh.FieldError
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditLimit {
			fields = append(fields, refresh.FieldError{Field: "limit", Rule: "must be an integer between 1 and " + strconv.Itoa(maxAuditLimit) + ", got " + strconv.Quote(v)})
		} else {
			limit = n
		}
	}
	var after int64
	if q.Has("after") {
		v := q.Get("after")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			fields = append(fields, refresh.FieldError{Field: "after", Rule: "must be the next of a previous page, a positive integer, got " + strconv.Quote(short(json.RawMessage(v)))})
		} else {
			after = n
		}
	}
	if len(fields) > 0 {
		s.Error(w, r, &refresh.ValidationError{Fields: fields})
		return
	}
	log, ok := s.svc.Store.(refresh.AuditLog)
	if !ok {
		s.Error(w, r, refresh.Errorf(refresh.ENOTFOUND, "this server keeps no audit"))
		return
	}
	entries, err := log.Audit(r.Context(), id, after, limit+1)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if len(entries) == 0 && after == 0 {
		// No entry: the model may still exist (written before the audit,
		// or by a caller that audits nothing).
		if _, err := s.svc.Store.Get(r.Context(), id); err != nil {
			s.Error(w, r, err)
			return
		}
	}
	res := AuditList{Audit: make([]AuditEntry, 0, min(len(entries), limit))}
	if len(entries) > limit {
		entries = entries[:limit]
		res.Next = strconv.FormatInt(entries[limit-1].ID, 10)
	}
	for _, e := range entries {
		res.Audit = append(res.Audit, newAuditEntry(e))
	}
	writeJSON(w, http.StatusOK, res)
}
