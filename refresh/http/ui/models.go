package ui

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// States the model list filters by, as the API's filters say them.
var listStates = []string{"", "running", "failing", "disabled", "paused"}

// listLimits are the page sizes the list offers.
var listLimits = []int{25, 50, 100, 200}

// listForm is the filter of the model list, as the form sends it.
type listForm struct {
	State  string
	Queue  string
	Prefix string
	After  string
	Limit  int
}

// modelsPage is the model list.
type modelsPage struct {
	*frame
	Form   listForm
	Errors fieldErrors
	States []string
	Limits []int
	Models []refresh.Model
	// Next is the cursor of the next page, "" on the last.
	Next string
}

// PageURL returns the link to the page of the list's filter after the
// cursor after ("" for the first page).
func (p modelsPage) PageURL(after string) template.URL {
	f := p.Form
	q := url.Values{}
	for _, kv := range []struct{ name, v string }{{"state", f.State}, {"queue", f.Queue}, {"prefix", f.Prefix}, {"after", after}} {
		if kv.v != "" {
			q.Set(kv.name, kv.v)
		}
	}
	if f.Limit != listLimits[1] {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	u := p.Base + "/models"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return template.URL(u) // built of escaped parts
}

// listParams are the parameters the list takes.
var listParams = []string{"state", "queue", "prefix", "after", "limit"}

func (h *Handler) handleModels(w http.ResponseWriter, r *http.Request, v *viewer) {
	p := modelsPage{frame: h.frame(w, r, v, "Models"), States: listStates, Limits: listLimits}
	p.Nav, p.Refresh = "models", 10
	form, errs := parseListForm(r.URL.RawQuery)
	p.Form, p.Errors = form, errs
	if len(errs) > 0 {
		p.Refresh = 0
		h.render(w, http.StatusBadRequest, "models", p)
		return
	}
	models, next, err := listModels(r.Context(), h.svc.Store, form, v.Prefix)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	p.Models, p.Next = models, next
	h.render(w, http.StatusOK, "models", p)
}

// parseListForm reads the list's filter from a query, with an error per
// field that breaks its rule, in the words of the API.
func parseListForm(raw string) (listForm, fieldErrors) {
	f := listForm{Limit: listLimits[1]}
	var errs fieldErrors
	q, err := url.ParseQuery(raw)
	if err != nil {
		errs.add("form", "the query does not parse: "+err.Error())
		return f, errs
	}
	for name, vals := range q {
		switch {
		case !slices.Contains(listParams, name):
			errs.add("form", fmt.Sprintf("%s: unknown parameter; want one of %s", shorten(name, 40), strings.Join(listParams, ", ")))
		case len(vals) > 1:
			errs.add(name, "must be given once")
		}
	}
	f.State = q.Get("state")
	if !slices.Contains(listStates, f.State) {
		errs.add("state", fmt.Sprintf("must be running, failing, disabled or paused, got %q", shorten(f.State, 40)))
	}
	f.Queue = strings.TrimSpace(q.Get("queue"))
	if f.Queue != "" && !refresh.ValidQueue(f.Queue) {
		errs.add("queue", refresh.QueueRule)
	}
	f.Prefix = strings.TrimSpace(q.Get("prefix"))
	if f.Prefix != "" && !refresh.ValidID(f.Prefix) {
		errs.add("prefix", "must be the start of a model id: "+refresh.IDRule)
	}
	f.After = q.Get("after")
	if f.After != "" && !refresh.ValidID(f.After) {
		errs.add("after", "must be a model id: "+refresh.IDRule)
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			errs.add("limit", fmt.Sprintf("must be an integer between 1 and 1000, got %q", shorten(s, 40)))
		} else {
			f.Limit = n
		}
	}
	return f, errs
}

// listModels returns a page of the models of form whose id starts with
// both form.Prefix and the viewer's prefix, and the cursor of the next
// page (the id of its last model), in one read of the store: the longer
// of the two prefixes is the range it reads.
func listModels(ctx context.Context, store refresh.Store, form listForm, viewerPrefix string) ([]refresh.Model, string, error) {
	prefix := form.Prefix
	switch {
	case strings.HasPrefix(prefix, viewerPrefix):
	case strings.HasPrefix(viewerPrefix, prefix):
		prefix = viewerPrefix
	default:
		return nil, "", nil // no id starts with both
	}
	t := true
	f := refresh.Filter{Prefix: prefix, Queue: form.Queue, After: form.After, NoPayload: true} // the list shows no payload
	switch form.State {
	case "running":
		f.Running = &t
	case "failing":
		f.Failing = &t
	case "disabled":
		f.Disabled = &t
	case "paused":
		f.Paused = &t
	}
	f.Limit = form.Limit + 1 // one more tells whether a next page exists
	models, err := store.List(ctx, f)
	if err != nil || len(models) <= form.Limit {
		return models, "", err
	}
	return models[:form.Limit], models[form.Limit-1].ID, nil
}
