package http

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/freshen-dev/freshen/refresh"
)

// The limits of docs/policy.md: at most max_running current attempts
// (a concurrency limit) and/or at most max_starts starts in any window of
// per, burst at most at once (a rate limit), per queue (kind queue), per
// id prefix (kind prefix) or per rate key (kind rate_key). They are
// stored in the database and shared by every instance; a token limited to
// an id prefix cannot see or change them.

// LimitList is the body of GET /limits.
type LimitList struct {
	Limits []refresh.Limit `json:"limits"`
}

// limitBody is the body of PUT /limits/{kind}/{key} as the Client sends
// it: the fields of a refresh.Limit but its kind and key, those left out
// unset.
type limitBody struct {
	MaxRunning int              `json:"max_running,omitempty"`
	MaxStarts  int              `json:"max_starts,omitempty"`
	Per        refresh.Duration `json:"per,omitempty"`
	Burst      int              `json:"burst,omitempty"`
}

// limitFields are the members of a limit's body, as errors list them.
const limitFields = "max_running, max_starts, per or burst"

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

// handlePutLimit creates or replaces the limit of the path with the body's
// max_running, max_starts, per and burst (each optional, null as left
// out; a field left out is unset, whatever the limit had): 200 with it.
// The limit is checked whole (refresh.CheckLimit).
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
	l := refresh.Limit{Kind: r.PathValue("kind"), Key: r.PathValue("key")}
	set := map[string]bool{}
	err = decodeObject(r.Context(), data, s.svc.EffectiveLimits().MaxFieldErrors, func(name string, v json.RawMessage) string {
		var n *int
		switch name {
		case "max_running":
			n = &l.MaxRunning
		case "max_starts":
			n = &l.MaxStarts
		case "burst":
			n = &l.Burst
		case "per":
			if isNull(v) {
				return ""
			}
			var per refresh.Duration
			if err := json.Unmarshal(v, &per); err != nil {
				return err.Error()
			}
			l.Per, set[name] = per, true
			return ""
		default:
			return "unknown field; want " + limitFields
		}
		if isNull(v) {
			return ""
		}
		if json.Unmarshal(v, n) != nil {
			return "must be an integer, got " + short(v)
		}
		if rule := refresh.LimitNumberRule(name, *n); rule != "" {
			return rule
		}
		set[name] = true
		return ""
	})
	if err == nil && !set["max_running"] && !set["max_starts"] {
		err = invalid("max_running", refresh.LimitMissingRule)
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if _, err := s.svc.Store.PutLimit(r.Context(), l, false); err != nil {
		s.Error(w, r, err)
		return
	}
	s.svc.WakeScheduler() // a higher limit frees slots and starts
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

// Limits returns the limits.
func (c *Client) Limits(ctx context.Context) (LimitList, error) {
	var out LimitList
	_, err := c.do(ctx, http.MethodGet, "/limits", nil, nil, &out)
	return out, err
}

// PutLimit creates or replaces the limit l (its kind and key, with its
// max_running, max_starts, per and burst; those at zero are left out).
func (c *Client) PutLimit(ctx context.Context, l refresh.Limit) (refresh.Limit, error) {
	body, err := json.Marshal(limitBody{MaxRunning: l.MaxRunning, MaxStarts: l.MaxStarts, Per: l.Per, Burst: l.Burst})
	if err != nil {
		return refresh.Limit{}, err
	}
	var out refresh.Limit
	_, err = c.do(ctx, http.MethodPut, limitPath(l.Kind, l.Key), nil, body, &out)
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
