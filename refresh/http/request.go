package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/freshen-dev/freshen/refresh"
)

// maxBodyBytes bounds a request body.
const maxBodyBytes = 1 << 20

// maxQueryParams bounds the parameters of a query string.
const maxQueryParams = 32

// invalid returns a *refresh.ValidationError of one broken rule.
func invalid(field, format string, args ...any) error {
	return &refresh.ValidationError{Fields: []refresh.FieldError{{Field: field, Rule: fmt.Sprintf(format, args...)}}}
}

// pathID returns the model id of r's path, or an error naming "id" when
// it is no valid id (a NUL, a byte that is not UTF-8, a slash...).
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !refresh.ValidID(id) {
		return "", invalid("id", "%s", refresh.IDRule)
	}
	return id, nil
}

// query parses r's query string, which may hold at most maxQueryParams
// parameters among allowed, each at most once. A query that does not
// parse (a ';' separator, a broken %-escape) is an error naming "query",
// never a query silently dropped.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	raw := r.URL.RawQuery
	if raw == "" {
		return url.Values{}, nil
	}
	if n := strings.Count(raw, "&") + 1; n > maxQueryParams {
		return nil, invalid("query", "must have at most %d parameters, got %d", maxQueryParams, n)
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("query", "%s", err)
	}
	want := "this route takes no parameters"
	switch len(allowed) {
	case 0:
	case 1:
		want = "want " + allowed[0]
	default:
		want = "want one of " + strings.Join(allowed, ", ")
	}
	var fields []refresh.FieldError
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case !slices.Contains(allowed, name):
			fields = append(fields, refresh.FieldError{Field: name, Rule: "unknown parameter; " + want})
		case len(q[name]) > 1:
			fields = append(fields, refresh.FieldError{Field: name, Rule: "must be given once"})
		}
	}
	if len(fields) > 0 {
		return nil, &refresh.ValidationError{Fields: fields}
	}
	return q, nil
}

// bodyError is a request body that could not be read to its end, mostly
// because the client went away.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "read body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// readBody reads r's body, at most maxBodyBytes of UTF-8. A body cut short
// is a *bodyError, a body too long an *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, &bodyError{err}
	}
	if !utf8.Valid(data) {
		return nil, invalid("body", "must be UTF-8")
	}
	return data, nil
}

// decodeObject reads the JSON object data member by member, in order,
// calling member for each one; member returns the rule its value breaks,
// or "". Repeated members are refused. It stops at the first maxErrors
// broken rules (the rest of the body is not read) and when ctx ends. Its
// errors are a *refresh.ValidationError naming the members at fault
// ("body" for the body as a whole), or ctx's error.
func decodeObject(ctx context.Context, data []byte, maxErrors int, member func(name string, v json.RawMessage) string) error {
	// One pass over the whole body finds a syntax error and its offset.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		if syntax, ok := errors.AsType[*json.SyntaxError](err); ok {
			return invalid("body", "invalid JSON at byte %d: %s", syntax.Offset, syntax)
		}
		return invalid("body", "invalid JSON: %s", err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return invalid("body", "must be a JSON object")
	}
	var fields []refresh.FieldError
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return invalid("body", "invalid JSON: %s", err)
	}
	maxErrors = max(maxErrors, 1)
	for dec.More() && len(fields) < maxErrors {
		if err := ctx.Err(); err != nil {
			return err
		}
		tok, err := dec.Token()
		var v json.RawMessage
		if err == nil {
			err = dec.Decode(&v)
		}
		if err != nil { // not reached: data is valid JSON
			return invalid("body", "invalid JSON: %s", err)
		}
		name := tok.(string)
		rule := "duplicate field"
		if !seen[name] {
			seen[name] = true
			rule = member(name, v)
		}
		if rule != "" {
			fields = append(fields, refresh.FieldError{Field: name, Rule: rule})
		}
	}
	if len(fields) > 0 {
		return &refresh.ValidationError{Fields: fields}
	}
	return nil
}

// modelBody is the body of a PUT or PATCH of a model. Queue, payload,
// policy, upstreams, upstreams mode and rate key are the members given, as
// sent (nil when absent; JSON null when sent as null).
type modelBody struct {
	queue, payload, policy   json.RawMessage
	upstreams, upstreamsMode json.RawMessage
	rateKey                  json.RawMessage
	trigger                  bool
	// reason is why the caller writes, for the audit.
	reason string
}

// decodeModel reads the body of a PUT or PATCH of model id: an object of
// queue (a string), payload (any JSON), policy (an object), upstreams (an
// array of ids), upstreams_mode (a string), rate_key (a string), trigger
// (true or false),
// reason (a string, for the audit), every member optional and null
// allowed, and id, which must be the path's. The id of the path is
// reported with the body's errors.
func (s *Server) decodeModel(w http.ResponseWriter, r *http.Request, id string, method string) (modelBody, error) {
	var b modelBody
	data, err := readBody(w, r)
	if err != nil {
		return b, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		hint := `send a JSON object such as {"policy": {}}; PUT replaces the whole model`
		if method == http.MethodPatch {
			hint = `send a JSON merge patch such as {"payload": {"key": "value"}}`
		}
		return b, invalid("body", "is empty; %s", hint)
	}
	maxErrors := s.svc.EffectiveLimits().MaxFieldErrors
	err = decodeObject(r.Context(), data, maxErrors, func(name string, v json.RawMessage) string {
		null := isNull(v)
		switch name {
		case "id":
			var got string
			if json.Unmarshal(v, &got) != nil || got != id {
				return fmt.Sprintf("must be the id of the path, %q, or left out", id)
			}
		case "queue":
			var q string
			if !null && json.Unmarshal(v, &q) != nil {
				return "must be a string, got " + short(v)
			}
			b.queue = v
		case "payload":
			b.payload = v
		case "policy":
			if !null && !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				return "must be a JSON object, got " + short(v)
			}
			b.policy = v
		case "trigger":
			if !null && json.Unmarshal(v, &b.trigger) != nil {
				return "must be true or false, got " + short(v)
			}
		case "upstreams":
			var ids []string
			if !null && json.Unmarshal(v, &ids) != nil {
				return "must be an array of model ids, got " + short(v)
			}
			b.upstreams = v
		case "upstreams_mode":
			var mode string
			if !null && json.Unmarshal(v, &mode) != nil {
				return "must be a string, got " + short(v)
			}
			b.upstreamsMode = v
		case "rate_key":
			var key string
			if !null && json.Unmarshal(v, &key) != nil {
				return "must be a string, got " + short(v)
			}
			b.rateKey = v
		case "reason":
			var rule string
			b.reason, rule = reasonRule(v)
			return rule
		default:
			return "unknown field; want queue, payload, policy, upstreams, upstreams_mode, rate_key, trigger or reason"
		}
		return ""
	})
	if v, ok := errors.AsType[*refresh.ValidationError](err); ok && !refresh.ValidID(id) {
		fields := append([]refresh.FieldError{{Field: "id", Rule: refresh.IDRule}}, v.Fields...)
		return b, &refresh.ValidationError{Fields: fields[:min(len(fields), max(maxErrors, 1))]}
	}
	return b, err // an invalid id alone is the service's to report, with the rest
}

// decodeEmpty reads a body that must be empty, or an object without
// members ({}): any member is refused by name. Actions and DELETE
// /models/{id} take a reason instead (decodeReason).
func (s *Server) decodeEmpty(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(w, r)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return err
	}
	return decodeObject(r.Context(), data, s.svc.EffectiveLimits().MaxFieldErrors, func(string, json.RawMessage) string {
		return "unknown field; this request takes an empty body or {}"
	})
}

// entityTags parses the If-Match or If-None-Match header of h (name): "*",
// or a list of entity tags ("abc", W/"abc"), returned without quotes. A
// weak tag keeps a W/ prefix in If-Match, where comparison is strong and
// never matches it, and loses it in If-None-Match, where comparison is
// weak. It returns nil when the header is absent.
func entityTags(h http.Header, name string) ([]string, error) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return nil, nil
	}
	bad := invalid(name, `must be * or a list of quoted ETags such as "3f2a..."`)
	var tags []string
	s := strings.Join(vals, ",")
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			break
		}
		if s[0] == '*' {
			tags = append(tags, "*")
			s = s[1:]
		} else {
			weak := strings.HasPrefix(s, "W/")
			s = strings.TrimPrefix(s, "W/")
			if !strings.HasPrefix(s, `"`) {
				return nil, bad
			}
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, bad
			}
			tag := s[1 : 1+end]
			if weak && name == "If-Match" {
				tag = "W/" + tag
			}
			tags = append(tags, tag)
			s = s[2+end:]
		}
		if s = strings.TrimLeft(s, " \t"); s != "" && s[0] != ',' {
			return nil, bad
		}
	}
	if len(tags) == 0 {
		return nil, bad
	}
	return tags, nil
}

// isNull reports whether the JSON value v is null.
func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// short returns JSON value v for an error message, cut at 40 bytes.
func short(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
