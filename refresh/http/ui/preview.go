package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// Bounds of the preview form.
const (
	maxPolicyBytes   = 64 << 10
	maxPatternLines  = 100
	maxPatternLength = 100 // attempts, once the counts are expanded
)

// previewForm is the policy preview's form.
type previewForm struct {
	Policy   string
	Attempts string
	Then     string
	Start    string
	Span     string
	ID       string
	// Trigger starts the model at start; an on-demand policy always does.
	Trigger bool
	// Model is the model the policy came from, if any, and Tag its
	// definition tag then: a save replaces the policy only if the model
	// has not changed since.
	Model string
	Tag   string
}

// previewPage is the policy preview.
type previewPage struct {
	*frame
	Form   previewForm
	Errors fieldErrors
	Result *projection
}

// The preview starts from the documented scenario of a retry that would run
// into the next run: a run every two hours, three failures, and the last
// retry aligned with the next run.
const (
	examplePolicy = `{
  "schedule": "FREQ=HOURLY;INTERVAL=2",
  "timezone": "Europe/Paris",
  "timeout": "30m",
  "retry": {
    "delays": ["10m", "20m", "50m"]
  }
}`
	exampleAttempts = "3x failure http_503 after 5m: upstream answered 503"
	exampleThen     = "success after 5m"
)

func (h *Handler) handlePreviewForm(w http.ResponseWriter, r *http.Request, v *viewer) {
	p := previewPage{frame: h.frame(w, r, v, "Policy preview")}
	p.Nav = "preview"
	p.Form = previewForm{Policy: examplePolicy, Attempts: exampleAttempts, Then: exampleThen,
		Start: p.Now.UTC().Truncate(time.Minute).Format(time.RFC3339), Span: "P3D", ID: "preview"}
	if id := r.URL.Query().Get("model"); id != "" {
		if !refresh.ValidID(id) || !v.Owns(id) {
			h.fail(w, r, v, http.StatusBadRequest, "model: must be the id of a model you can see")
			return
		}
		m, err := h.svc.Store.Get(r.Context(), id)
		if err != nil {
			h.failErr(w, r, v, err)
			return
		}
		p.Form.Policy, p.Form.ID, p.Form.Model, p.Form.Tag = indentJSON(m.Policy), m.ID, m.ID, refresh.DefinitionTag(m)
		kind := "error"
		if m.LastError != nil && m.LastError.Kind != "" {
			kind = m.LastError.Kind
		}
		p.Form.Attempts = "failure " + kind + " after 1m"
		if kind == refresh.KindTimeout {
			p.Form.Attempts = "timeout"
		}
		p.Form.Then = p.Form.Attempts
		if m.LastError != nil && kind != refresh.KindTimeout {
			p.Form.Then += ": " + strings.ReplaceAll(m.LastError.Message, "\n", " ")
		}
	}
	h.render(w, http.StatusOK, "preview", p)
}

func (h *Handler) handlePreview(w http.ResponseWriter, r *http.Request, v *viewer) {
	form := previewForm{
		Policy: r.PostForm.Get("policy"), Attempts: r.PostForm.Get("attempts"), Then: r.PostForm.Get("then"),
		Start: strings.TrimSpace(r.PostForm.Get("start")), Span: strings.TrimSpace(r.PostForm.Get("span")),
		ID: strings.TrimSpace(r.PostForm.Get("id")), Model: r.PostForm.Get("model"),
		Trigger: r.PostForm.Get("trigger") != "", Tag: r.PostForm.Get("tag"),
	}
	if form.Model != "" && (!refresh.ValidID(form.Model) || !v.Owns(form.Model)) {
		form.Model, form.Tag = "", ""
	}
	save := r.PostForm.Get("do") == "save"
	if save && (form.Model == "" || !v.CanWrite()) {
		h.fail(w, r, v, http.StatusForbidden, fmt.Sprintf("Saving a policy needs scope write and a model of yours; your token %q has scope %s.", v.Name, v.ScopeText()))
		return
	}
	p := previewPage{frame: h.frame(w, r, v, "Policy preview"), Form: form}
	p.Nav = "preview"
	lim := h.svc.EffectiveLimits()
	spec, lines, errs := parsePreview(form, lim)
	if len(errs) > 0 {
		p.Errors = errs
		h.render(w, http.StatusBadRequest, "preview", p)
		return
	}
	if save {
		h.savePolicy(w, r, v, p)
		return
	}
	timeline, stopped, err := simulate(r.Context(), spec, lim)
	if err != nil {
		if !p.Errors.fromValidation(err, func(field string) (string, string) { return previewField(field, lines) }) {
			h.failErr(w, r, v, err)
			return
		}
		h.render(w, http.StatusBadRequest, "preview", p)
		return
	}
	policy, err := refresh.ParsePolicy([]byte(form.Policy), lim) // checked by ParseSpec
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	m := refresh.Model{ID: form.ID, Policy: policy, CreatedAt: spec.Start}
	loc := zoneOf(m)
	p.Result = &projection{
		Title:   "Simulated timeline",
		Summary: summarize(timeline, loc),
		Rows:    rows(timeline),
		Stopped: stopped,
		Chart:   buildChart(chartInput{entries: forChart(timeline), start: spec.Start, next: m.Next, loc: loc, startLabel: "start"}),
	}
	h.render(w, http.StatusOK, "preview", p)
}

// savePolicy replaces the policy of the preview's model with the form's,
// if the model has not changed since the preview was opened; then shows
// the model. The form shows the policy only: everything else of the
// definition (queue, payload, upstreams and their mode, rate key) stays
// as it was.
// The policy is replaced whole, as the form shows it whole: a member left
// out of it takes its default.
func (h *Handler) savePolicy(w http.ResponseWriter, r *http.Request, v *viewer, p previewPage) {
	id := p.Form.Model
	m, err := h.svc.Store.Get(r.Context(), id)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	// The tag covers the whole definition and is checked again in the
	// write's transaction: what m holds besides the policy is what the
	// preview was opened on, and what the model still holds when it is
	// written.
	err = refresh.Errorf(refresh.EPRECONDITION, "model %s has changed", id)
	if refresh.DefinitionTag(m) == p.Form.Tag {
		_, _, err = h.svc.Put(v.audited(r.Context()), refresh.PutRequest{ID: id, Queue: m.Queue, Payload: m.Payload,
			Upstreams: m.Upstreams, UpstreamsMode: m.UpstreamsMode, RateKey: m.RateKey,
			Policy: json.RawMessage(p.Form.Policy), IfMatch: []string{p.Form.Tag}})
	}
	switch {
	case err == nil:
		h.log.Info("dashboard policy saved", "token", v.Name, "model_id", id)
		h.setFlash(w, r, "ok", "Saved the policy of "+id+".")
		http.Redirect(w, r, h.base+"/models/"+url.PathEscape(id), http.StatusSeeOther)
	case refresh.ErrorCode(err) == refresh.EPRECONDITION:
		p.Errors.add("form", id+" has changed since this preview was opened; open the preview from its page again.")
		h.render(w, http.StatusPreconditionFailed, "preview", p)
	case p.Errors.fromValidation(err, func(field string) (string, string) { return previewField(field, nil) }):
		h.render(w, http.StatusBadRequest, "preview", p)
	default:
		h.failErr(w, r, v, err)
	}
}

// parsePreview checks the form and returns the simulation it asks for, and
// the line of the attempts field each attempt comes from; or the errors of
// the form, by field.
func parsePreview(form previewForm, lim refresh.Limits) (scenarios.Spec, []int, fieldErrors) {
	var errs fieldErrors
	trigger := form.Trigger
	policy := bytes.TrimSpace([]byte(form.Policy))
	switch {
	case len(policy) == 0:
		errs.add("policy", `is required: a JSON object such as {"schedule": "FREQ=DAILY;BYHOUR=6", "timeout": "1h"}`)
	case len(policy) > maxPolicyBytes:
		errs.add("policy", fmt.Sprintf("must be at most %d bytes, got %d", maxPolicyBytes, len(policy)))
	default:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(policy, &obj); err != nil {
			if syntax, ok := errors.AsType[*json.SyntaxError](err); ok {
				errs.add("policy", fmt.Sprintf("invalid JSON at byte %d: %s", syntax.Offset, syntax))
			} else {
				errs.add("policy", "must be a JSON object")
			}
		}
		if s, ok := obj["schedule"]; !ok || isEmptyJSON(s) {
			trigger = true // on demand: nothing would ever start
		}
	}
	attempts, lines, aerrs := parsePattern(form.Attempts, "attempts", maxPatternLines)
	for _, e := range aerrs {
		errs.add("attempts", e)
	}
	var then behaviourJSON
	switch t, _, terrs := parsePattern(form.Then, "then", 1); {
	case len(terrs) > 0:
		for _, e := range terrs {
			errs.add("then", e)
		}
	case len(t) > 1:
		errs.add("then", "must be one attempt, without a count")
	case len(t) == 1:
		then = t[0]
	default:
		then = behaviourJSON{Outcome: "success"}
	}
	start, err := time.Parse(time.RFC3339, form.Start)
	if err != nil {
		errs.add("start", fmt.Sprintf("must be an RFC 3339 time such as 2026-03-02T05:30:00Z, got %q", shorten(form.Start, 40)))
	}
	span, err := refresh.ParseDuration(form.Span)
	if err != nil || span <= 0 {
		errs.add("span", fmt.Sprintf(`must be a duration > 0 such as "72h" or "P3D", got %q`, shorten(form.Span, 40)))
	}
	if !refresh.ValidID(form.ID) {
		errs.add("id", refresh.IDRule)
	}
	if len(errs) > 0 {
		return scenarios.Spec{}, nil, errs
	}
	data, err := json.Marshal(specJSON{
		Start: start.UTC().Format(time.RFC3339), Until: start.Add(time.Duration(span)).UTC().Format(time.RFC3339),
		Model:    specModelJSON{ID: form.ID, Trigger: trigger, Policy: json.RawMessage(policy)},
		Attempts: attempts, Default: &then,
	})
	if err != nil {
		errs.add("form", err.Error())
		return scenarios.Spec{}, nil, errs
	}
	spec, err := scenarios.ParseSpec(data, lim)
	if err != nil {
		if !errs.fromValidation(err, func(field string) (string, string) { return previewField(field, lines) }) {
			errs.add("form", err.Error())
		}
		return scenarios.Spec{}, nil, errs
	}
	return spec, lines, nil
}

// specJSON and the types below are the JSON of a simulation spec
// (docs/simulate.md), as ParseSpec reads it.
type specJSON struct {
	Start    string          `json:"start"`
	Until    string          `json:"until"`
	Model    specModelJSON   `json:"model"`
	Attempts []behaviourJSON `json:"attempts,omitempty"`
	Default  *behaviourJSON  `json:"default,omitempty"`
}

type specModelJSON struct {
	ID      string          `json:"id"`
	Trigger bool            `json:"trigger"`
	Policy  json.RawMessage `json:"policy"`
}

type behaviourJSON struct {
	Outcome string `json:"outcome"`
	After   string `json:"after,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message,omitempty"`
}

// previewField files an error of the simulator under a field of the form:
// the policy's fields under policy, the attempts' under attempts with
// their line.
func previewField(field string, lines []int) (string, string) {
	switch {
	case strings.HasPrefix(field, "model.policy"):
		return "policy", strings.TrimPrefix(field, "model.")
	case strings.HasPrefix(field, "policy"):
		return "policy", field
	case strings.HasPrefix(field, "attempts["):
		if n, err := strconv.Atoi(field[len("attempts["):strings.IndexByte(field, ']')]); err == nil && n < len(lines) {
			return "attempts", fmt.Sprintf("line %d", lines[n])
		}
		return "attempts", field
	case strings.HasPrefix(field, "default"):
		return "then", ""
	case field == "start":
		return "start", ""
	case field == "until":
		return "span", "start + span"
	case field == "model.id", field == "id":
		return "id", ""
	}
	return "form", field
}

// countPattern is the count that may start a line: "3x", "3×".
var countPattern = regexp.MustCompile(`^([0-9]+)\s*[x×]$`)

// parsePattern reads a failure pattern: one attempt a line, as
//
//	[N x] success|failure|timeout [kind] [after DURATION] [: message]
//
// ("fail" stands for failure; kind goes with failure only). It returns the
// attempts, the line of each, and the rules the text breaks, each naming
// its line. At most maxLines lines and maxPatternLength attempts.
func parsePattern(text, field string, maxLines int) ([]behaviourJSON, []int, []string) {
	var out []behaviourJSON
	var lines []int
	var errs []string
	n := 0
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if n++; n > maxLines {
			errs = append(errs, fmt.Sprintf("must have at most %d lines", maxLines))
			break
		}
		at := ""
		if field == "attempts" {
			at = fmt.Sprintf("line %d: ", i+1)
		}
		b, count, err := parseAttempt(line)
		if err != "" {
			errs = append(errs, at+err)
			continue
		}
		if field != "attempts" && count != 1 {
			errs = append(errs, "must be one attempt, without a count")
			continue
		}
		if len(out)+count > maxPatternLength {
			errs = append(errs, fmt.Sprintf("%sthe pattern must have at most %d attempts (then is the rest)", at, maxPatternLength))
			break
		}
		for range count {
			out = append(out, b)
			lines = append(lines, i+1)
		}
	}
	return out, lines, errs
}

// parseAttempt reads one line of a failure pattern and its count, or the
// rule it breaks.
func parseAttempt(line string) (behaviourJSON, int, string) {
	var b behaviourJSON
	count := 1
	if head, msg, ok := strings.Cut(line, ":"); ok {
		line, b.Message = head, strings.TrimSpace(msg)
	}
	words := strings.Fields(line)
	if len(words) > 0 {
		if c := countPattern.FindStringSubmatch(words[0]); c != nil {
			count, _ = strconv.Atoi(c[1])
			words = words[1:]
		} else if len(words) > 1 && (words[1] == "x" || words[1] == "×") {
			if c, err := strconv.Atoi(words[0]); err == nil {
				count, words = c, words[2:]
			}
		}
	}
	if count < 1 || count > maxPatternLength {
		return b, 0, fmt.Sprintf("the count must be between 1 and %d", maxPatternLength)
	}
	if len(words) == 0 {
		return b, 0, "is empty; write e.g. \"failure http_503 after 2m\", \"timeout\" or \"success after 1m\""
	}
	switch words[0] {
	case "success", "succeed", "ok":
		b.Outcome = "success"
	case "failure", "fail", "failed":
		b.Outcome = "failure"
	case "timeout", "timed-out":
		b.Outcome = "timeout"
	default:
		return b, 0, fmt.Sprintf("must start with success, failure or timeout, got %q", shorten(words[0], 40))
	}
	words = words[1:]
	if b.Outcome == "failure" && len(words) > 0 && words[0] != "after" {
		b.Kind, words = words[0], words[1:]
	}
	if len(words) > 0 && words[0] == "after" {
		if len(words) < 2 {
			return b, 0, `"after" needs a duration such as 2m or PT2M`
		}
		d, err := refresh.ParseDuration(words[1])
		if err != nil || d < 0 {
			return b, 0, fmt.Sprintf("after: must be a duration >= 0 such as 2m or PT2M, got %q", shorten(words[1], 40))
		}
		b.After, words = words[1], words[2:]
	}
	if len(words) > 0 {
		return b, 0, fmt.Sprintf("unexpected %q; write e.g. \"failure http_503 after 2m: upstream answered 503\"", shorten(words[0], 40))
	}
	if b.Message != "" && b.Outcome != "failure" {
		return b, 0, "a message (after ':') goes with failure only"
	}
	return b, count, ""
}

// isEmptyJSON reports whether v is null or "".
func isEmptyJSON(v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	return s == "null" || s == `""`
}
