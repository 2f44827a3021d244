package ui

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// The limits page lists the limits as GET /limits does, and lets an admin
// set and delete them as PUT and DELETE /limits/{kind}/{key} do: the same
// store calls, the same rules (refresh.LimitNumberRule, then
// refresh.CheckLimit in the store), the same wake-up of the scheduler. As
// the API, it needs a token without a prefix: a limit concerns more than
// one tenant's models.

// limitForm is the form of a limit as typed: numbers and per as text, ""
// for a member left out.
type limitForm struct {
	Kind, Key                         string
	MaxRunning, MaxStarts, Per, Burst string
}

// limitsPage is the list of limits and the form to set one.
type limitsPage struct {
	*frame
	Limits []refresh.Limit
	Kinds  []string
	Form   limitForm
	Errors fieldErrors
}

// limitInput is a text field of the form.
type limitInput struct {
	Name, Label, Value, Placeholder string
	// Class is the input's class ("mono" for text typed as is), Wide
	// whether it takes the room left, Numeric whether it takes a number.
	Class         string
	Wide, Numeric bool
}

// Inputs are the form's text fields, after its kind.
func (p limitsPage) Inputs() []limitInput {
	f := p.Form
	return []limitInput{
		{Name: "key", Label: "Key", Value: f.Key, Placeholder: "exports, acme-, api.example.com", Class: "mono", Wide: true},
		{Name: "max_running", Label: "Max running", Value: f.MaxRunning, Numeric: true},
		{Name: "max_starts", Label: "Max starts", Value: f.MaxStarts, Numeric: true},
		{Name: "per", Label: "Per", Value: f.Per, Placeholder: "1m", Class: "mono"},
		{Name: "burst", Label: "Burst", Value: f.Burst, Numeric: true},
	}
}

// limitKinds are the kinds the form offers, in the order of the store's
// list.
var limitKinds = []string{refresh.LimitPrefix, refresh.LimitQueue, refresh.LimitRateKey}

func (h *Handler) handleLimits(w http.ResponseWriter, r *http.Request, v *viewer) {
	h.renderLimits(w, r, v, http.StatusOK, limitForm{Kind: refresh.LimitQueue}, nil)
}

// renderLimits answers status with the limits page, its form filled with f
// and errs under its fields.
func (h *Handler) renderLimits(w http.ResponseWriter, r *http.Request, v *viewer, status int, f limitForm, errs fieldErrors) {
	limits, err := h.svc.Store.Limits(r.Context())
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	p := limitsPage{frame: h.frame(w, r, v, "Limits"), Limits: limits, Kinds: limitKinds, Form: f, Errors: errs}
	p.Nav = "limits"
	h.render(w, status, "limits", p)
}

// handleLimitsAct sets (do=set) or deletes (do=delete) the limit of the
// form's kind and key.
func (h *Handler) handleLimitsAct(w http.ResponseWriter, r *http.Request, v *viewer) {
	back := h.base + "/limits"
	switch do := r.PostForm.Get("do"); do {
	case "set":
		f := limitForm{Kind: r.PostForm.Get("kind"), Key: r.PostForm.Get("key"), MaxRunning: r.PostForm.Get("max_running"),
			MaxStarts: r.PostForm.Get("max_starts"), Per: r.PostForm.Get("per"), Burst: r.PostForm.Get("burst")}
		l, errs := f.limit()
		if len(errs) == 0 {
			_, err := h.svc.Store.PutLimit(r.Context(), l, false)
			if err != nil && !errs.fromValidation(err, func(field string) (string, string) { return field, "" }) {
				h.failErr(w, r, v, err)
				return
			}
		}
		if len(errs) > 0 {
			h.renderLimits(w, r, v, http.StatusBadRequest, f, errs)
			return
		}
		h.svc.WakeScheduler() // a higher limit frees slots and starts
		h.log.Info("dashboard limit set", "token", v.Name, "limit", l.String())
		h.setFlash(w, r, "ok", "Set "+l.String()+".")
	case "delete":
		l := refresh.Limit{Kind: r.PostForm.Get("kind"), Key: r.PostForm.Get("key")}
		err := h.svc.Store.DeleteLimit(r.Context(), l.Kind, l.Key)
		switch {
		case refresh.ErrorCode(err) == refresh.ENOTFOUND:
			h.setFlash(w, r, "info", fmt.Sprintf("Nothing was deleted: there is no limit %s (deleted meanwhile?).", shorten(l.Name(), 160)))
		case err != nil:
			h.failErr(w, r, v, err)
			return
		default:
			h.svc.WakeScheduler() // its waiters start, or wait for another limit
			h.log.Info("dashboard limit deleted", "token", v.Name, "limit", l.Name())
			h.setFlash(w, r, "ok", "Deleted the limit "+l.Name()+"; the models waiting for it start at the next pass.")
		}
	default:
		h.setFlash(w, r, "error", fmt.Sprintf("Nothing was done: do: must be set or delete, got %q.", shorten(do, 40)))
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// limit reads f as the API reads the body of PUT /limits/{kind}/{key}: a
// member left empty is left out; a number given must be an integer at
// least 1 (burst at most 10,000: refresh.LimitNumberRule); per a
// duration; max_running or max_starts must be given. The store checks the
// rest (refresh.CheckLimit).
func (f limitForm) limit() (refresh.Limit, fieldErrors) {
	l := refresh.Limit{Kind: f.Kind, Key: f.Key}
	var errs fieldErrors
	for _, n := range []struct {
		name, text string
		to         *int
	}{{"max_running", f.MaxRunning, &l.MaxRunning}, {"max_starts", f.MaxStarts, &l.MaxStarts}, {"burst", f.Burst, &l.Burst}} {
		text := strings.TrimSpace(n.text)
		if text == "" {
			continue
		}
		v, err := strconv.Atoi(text)
		if err != nil {
			errs.add(n.name, "must be an integer, got "+strconv.Quote(shorten(text, 40)))
			continue
		}
		if rule := refresh.LimitNumberRule(n.name, v); rule != "" {
			errs.add(n.name, rule)
			continue
		}
		*n.to = v
	}
	if per := strings.TrimSpace(f.Per); per != "" {
		d, err := refresh.ParseDuration(per)
		if err != nil {
			errs.add("per", err.Error())
		}
		l.Per = d
	}
	if len(errs) == 0 && l.MaxRunning == 0 && l.MaxStarts == 0 {
		errs.add("max_running", refresh.LimitMissingRule)
	}
	return l, errs
}
