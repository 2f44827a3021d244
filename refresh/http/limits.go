package http

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/freshen-dev/freshen/refresh"
)

// The concurrency limits of docs/policy.md: at most max_running
// current attempts per queue (kind queue) or per id prefix (kind prefix).
// They are stored in the database and shared by every instance; a token
// limited to an id prefix cannot see or change them.

// LimitList is the body of GET /limits.
type LimitList struct {
	Limits []refresh.Limit `json:"limits"`
}

// limitBody is the body of PUT /limits/{kind}/{key}.
type limitBody struct {
	MaxRunning *int `json:"max_running"`
}

// handleLimits lists the limits, by kind then key.
func (s *Server) handleLimits(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.Error(w, r, err)
		return
	}
	limits, err := s.svc.Store.Limits(r.Context())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if limits == nil {
		limits = []refresh.Limit{}
	}
	writeJSON(w, http.StatusOK, LimitList{Limits: limits})
}

// handlePutLimit creates or replaces the limit of the path: 200 with it.
func (s *Server) handlePutLimit(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.Error(w, r, err)
		return
	}
	data, err := readBody(w, r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	var b limitBody
	err = decodeObject(r.Context(), data, s.svc.EffectiveLimits().MaxFieldErrors, func(name string, v json.RawMessage) string {
		if name != "max_running" {
			return "unknown field; want max_running"
		}
		var n int
		if json.Unmarshal(v, &n) != nil {
			return "must be an integer, got " + short(v)
		}
		b.MaxRunning = &n
		return ""
	})
	if err == nil && b.MaxRunning == nil {
		err = invalid("max_running", "missing")
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	l := refresh.Limit{Kind: r.PathValue("kind"), Key: r.PathValue("key"), MaxRunning: *b.MaxRunning}
	if _, err := s.svc.Store.PutLimit(r.Context(), l, false); err != nil {
		s.Error(w, r, err)
		return
	}
	s.svc.WakeScheduler() // a higher limit frees slots
	writeJSON(w, http.StatusOK, l)
}

// handleDeleteLimit removes the limit of the path: 204.
func (s *Server) handleDeleteLimit(w http.ResponseWriter, r *http.Request) {
	_, err := query(r)
	if err == nil {
		err = s.decodeEmpty(w, r)
	}
	if err == nil {
		err = s.svc.Store.DeleteLimit(r.Context(), r.PathValue("kind"), r.PathValue("key"))
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	s.svc.WakeScheduler()
	w.WriteHeader(http.StatusNoContent)
}

// Limits returns the concurrency limits.
func (c *Client) Limits(ctx context.Context) (LimitList, error) {
	var out LimitList
	_, err := c.do(ctx, http.MethodGet, "/limits", nil, nil, &out)
	return out, err
}

// PutLimit creates or replaces the limit of kind and key.
func (c *Client) PutLimit(ctx context.Context, kind, key string, maxRunning int) (refresh.Limit, error) {
	body, err := json.Marshal(limitBody{MaxRunning: &maxRunning})
	if err != nil {
		return refresh.Limit{}, err
	}
	var out refresh.Limit
	_, err = c.do(ctx, http.MethodPut, limitPath(kind, key), nil, body, &out)
	return out, err
}

// DeleteLimit removes the limit of kind and key.
func (c *Client) DeleteLimit(ctx context.Context, kind, key string) error {
	_, err := c.do(ctx, http.MethodDelete, limitPath(kind, key), nil, nil, nil)
	return err
}

func limitPath(kind, key string) string {
	return "/limits/" + url.PathEscape(kind) + "/" + url.PathEscape(key)
}
