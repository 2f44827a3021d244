package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// BulkSelector is the selector of a bulk action: the list filters by id
// prefix, queue and state (refresh.States), and overdue (a freshness
// episode is open). Every member set must hold.
type BulkSelector struct {
	Prefix  string `json:"prefix,omitempty"`
	Queue   string `json:"queue,omitempty"`
	State   string `json:"state,omitempty"`
	Overdue *bool  `json:"overdue,omitempty"`
}

// BulkRequest is the body of POST /bulk/{action}.
type BulkRequest struct {
	Selector BulkSelector `json:"selector"`
	// All must be true for an empty selector, which matches every model.
	All bool `json:"all,omitempty"`
	// DryRun counts the models matched and those the action would change,
	// and writes nothing.
	DryRun bool   `json:"dry_run,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// BulkResult is the answer of POST /bulk/{action}: {"matched",
// "would_change"} for a dry run, else {"matched", "changed", "unchanged",
// "failed"}.
type BulkResult struct {
	DryRun      bool
	Matched     int
	WouldChange int
	Changed     int
	Unchanged   int
	Failed      []refresh.BulkFailure
}

type bulkDryRunJSON struct {
	Matched     int `json:"matched"`
	WouldChange int `json:"would_change"`
}

type bulkResultJSON struct {
	Matched   int                   `json:"matched"`
	Changed   int                   `json:"changed"`
	Unchanged int                   `json:"unchanged"`
	Failed    []refresh.BulkFailure `json:"failed"`
}

// MarshalJSON writes the shape of r's kind: a dry run's or an action's.
func (r BulkResult) MarshalJSON() ([]byte, error) {
	if r.DryRun {
		return json.Marshal(bulkDryRunJSON{Matched: r.Matched, WouldChange: r.WouldChange})
	}
	failed := r.Failed
	if failed == nil {
		failed = []refresh.BulkFailure{}
	}
	return json.Marshal(bulkResultJSON{Matched: r.Matched, Changed: r.Changed, Unchanged: r.Unchanged, Failed: failed})
}

// UnmarshalJSON reads either shape; would_change marks a dry run's.
func (r *BulkResult) UnmarshalJSON(data []byte) error {
	var v struct {
		Matched     int                   `json:"matched"`
		WouldChange *int                  `json:"would_change"`
		Changed     int                   `json:"changed"`
		Unchanged   int                   `json:"unchanged"`
		Failed      []refresh.BulkFailure `json:"failed"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = BulkResult{Matched: v.Matched, Changed: v.Changed, Unchanged: v.Unchanged, Failed: v.Failed}
	if v.WouldChange != nil {
		r.DryRun, r.WouldChange = true, *v.WouldChange
	}
	return nil
}

// handleBulk applies action to every model a selector matches (see
// refresh.Service.Bulk), within the id prefix of the caller's token.
func (s *Server) handleBulk(w http.ResponseWriter, r *http.Request, action string) {
	if _, err := query(r); err != nil {
		s.Error(w, r, err)
		return
	}
	req, reason, err := s.decodeBulk(w, r, action)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if p, ok := PrincipalFrom(r.Context()); ok && p.Prefix != "" {
		// A token limited to a prefix reaches only its models: an empty
		// selector means all of them, a prefix must lie within it.
		switch {
		case req.Selector.Prefix == "":
			req.Selector.Prefix, req.All = p.Prefix, false
		case !strings.HasPrefix(req.Selector.Prefix, p.Prefix):
			s.auth.forbid(w, r, p, fmt.Sprintf("token %q is limited to the models whose id starts with %q; selector.prefix %q reaches beyond it", p.Name, p.Prefix, req.Selector.Prefix), "")
			return
		}
	}
	res, err := s.svc.Bulk(auditContext(r, reason), req)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, BulkResult{DryRun: req.DryRun, Matched: res.Matched, WouldChange: res.WouldChange,
		Changed: res.Changed, Unchanged: res.Unchanged, Failed: res.Failed})
}

// decodeBulk reads the body of POST /bulk/{action}, {"selector", "all",
// "dry_run", "reason"}, and checks it whole (refresh.CheckBulk): every
// broken rule is reported, each named by its field (selector.state,
// reason...), and nothing is done.
func (s *Server) decodeBulk(w http.ResponseWriter, r *http.Request, action string) (refresh.BulkRequest, string, error) {
	req := refresh.BulkRequest{Action: action}
	var reason string
	data, err := readBody(w, r)
	if err != nil {
		return req, "", err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return req, "", invalid("body", `is empty; send a JSON object such as {"selector": {"prefix": "acme-"}, "dry_run": true}`)
	}
	maxErrors := max(s.svc.EffectiveLimits().MaxFieldErrors, 1)
	var fields []refresh.FieldError
	var selector json.RawMessage
	err = decodeObject(r.Context(), data, maxErrors, func(name string, v json.RawMessage) string {
		null := isNull(v)
		switch name {
		case "selector":
			if !null && !isObjectJSON(v) {
				return "must be a JSON object, got " + short(v)
			}
			selector = v
		case "all":
			if !null && json.Unmarshal(v, &req.All) != nil {
				return "must be true or false, got " + short(v)
			}
		case "dry_run":
			if !null && json.Unmarshal(v, &req.DryRun) != nil {
				return "must be true or false, got " + short(v)
			}
		case "reason":
			var rule string
			reason, rule = reasonRule(v)
			return rule
		default:
			return "unknown field; want selector, all, dry_run or reason"
		}
		return ""
	})
	if v, ok := errors.AsType[*refresh.ValidationError](err); ok {
		fields = append(fields, v.Fields...)
	} else if err != nil {
		return req, "", err
	}
	if selector != nil && !isNull(selector) {
		err := decodeObject(r.Context(), selector, maxErrors, func(name string, v json.RawMessage) string {
			null := isNull(v)
			switch name {
			case "prefix", "queue", "state":
				var text string
				if !null && json.Unmarshal(v, &text) != nil {
					return "must be a string, got " + short(v)
				}
				switch name {
				case "prefix":
					req.Selector.Prefix = text
				case "queue":
					req.Selector.Queue = text
				case "state":
					req.Selector.State = text
				}
			case "overdue":
				if !null {
					var b bool
					if json.Unmarshal(v, &b) != nil {
						return "must be true or false, got " + short(v)
					}
					req.Selector.Overdue = &b
				}
			default:
				return "unknown field; want prefix, queue, state or overdue"
			}
			return ""
		})
		if v, ok := errors.AsType[*refresh.ValidationError](err); ok {
			for _, f := range v.Fields {
				f.Field = strings.TrimSuffix("selector."+f.Field, ".body")
				fields = append(fields, f)
			}
		} else if err != nil {
			return req, "", err
		}
	}
	if len(fields) == 0 {
		if v, ok := errors.AsType[*refresh.ValidationError](refresh.CheckBulk(req)); ok {
			fields = append(fields, v.Fields...)
		}
	} else {
		// Whether the selector names a criterion is moot when a member
		// broke a rule; the values read are still checked.
		fields = append(fields, req.Selector.Check()...)
	}
	if len(fields) > 0 {
		return req, "", &refresh.ValidationError{Fields: fields[:min(len(fields), maxErrors)], More: max(len(fields)-maxErrors, 0)}
	}
	return req, reason, nil
}

// isObjectJSON reports whether the JSON value v is an object.
func isObjectJSON(v json.RawMessage) bool {
	return strings.HasPrefix(strings.TrimSpace(string(v)), "{")
}
