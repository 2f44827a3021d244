package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// Bounds of the dead-letter page.
const (
	deadPageSize = 50
	maxDeadIDLen = 64
)

// deadPage is the dead-letter list.
type deadPage struct {
	*frame
	Dead   []refresh.DeadLetter
	After  string
	Next   string
	Errors fieldErrors
	// Missing says the list is not there: serve was started without it.
	Missing bool
}

func (h *Handler) handleDead(w http.ResponseWriter, r *http.Request, v *viewer) {
	p := deadPage{frame: h.frame(w, r, v, "Dead letters")}
	p.Nav = "dead"
	if h.dead == nil {
		p.Missing = true
		h.render(w, http.StatusOK, "dead", p)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, v, http.StatusBadRequest, "query: "+err.Error())
		return
	}
	p.After = q.Get("after")
	if p.After != "" && !validDeadID(p.After) {
		p.Errors.add("after", "must be a dead-letter id: hex digits, as this page shows")
		h.render(w, http.StatusBadRequest, "dead", p)
		return
	}
	p.Dead, p.Next, err = h.dead.DeadLetters(r.Context(), p.After, deadPageSize)
	if err != nil {
		if p.Errors.fromValidation(err, func(field string) (string, string) { return field, "" }) {
			h.render(w, http.StatusBadRequest, "dead", p)
			return
		}
		h.failErr(w, r, v, err)
		return
	}
	h.render(w, http.StatusOK, "dead", p)
}

// handleDeadAct requeues or drops the dead letters ticked on the page.
func (h *Handler) handleDeadAct(w http.ResponseWriter, r *http.Request, v *viewer) {
	back := h.base + "/dead"
	if after := r.PostForm.Get("after"); after != "" && validDeadID(after) {
		back += "?after=" + url.QueryEscape(after)
	}
	if h.dead == nil {
		h.fail(w, r, v, http.StatusNotFound, "This server has no dead-letter list.")
		return
	}
	do := r.PostForm.Get("do")
	ids := r.PostForm["ids"]
	var errs fieldErrors
	if do != "requeue" && do != "drop" {
		errs.add("do", fmt.Sprintf("must be requeue or drop, got %q", shorten(do, 40)))
	}
	switch {
	case len(ids) == 0:
		errs.add("ids", "tick at least one dead letter")
	case len(ids) > deadPageSize:
		errs.add("ids", fmt.Sprintf("must be at most %d at once", deadPageSize))
	}
	for _, id := range ids {
		if !validDeadID(id) {
			errs.add("ids", fmt.Sprintf("%q: must be a dead-letter id: hex digits, as this page shows", shorten(id, 40)))
			break
		}
	}
	if len(errs) > 0 {
		h.setFlash(w, r, "error", "Nothing was done: "+errs.text())
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	var res refresh.DeadResult
	var err error
	if do == "requeue" {
		res, err = h.dead.RequeueDead(r.Context(), ids)
	} else {
		res, err = h.dead.DropDead(r.Context(), ids)
	}
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	h.log.Info("dashboard dead letters", "token", v.Name, "do", do, "done", res.Done, "missing", len(res.Missing), "refused", len(res.Refused))
	verb := "Requeued"
	if do == "drop" {
		verb = "Dropped"
	}
	msg := fmt.Sprintf("%s %s.", verb, plural(res.Done, "dead letter"))
	kind := "ok"
	if len(res.Missing) > 0 {
		msg += fmt.Sprintf(" %d no longer on the list (handled meanwhile).", len(res.Missing))
		kind = "info"
	}
	for _, f := range res.Refused {
		msg += fmt.Sprintf(" %s stays: %s.", f.ID, f.Reason)
		kind = "error"
	}
	h.setFlash(w, r, kind, msg)
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// validDeadID reports whether id can name a dead letter: lowercase hex
// digits.
func validDeadID(id string) bool {
	if id == "" || len(id) > maxDeadIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// text writes the errors on one line: "ids: tick at least one; do: ...".
func (e fieldErrors) text() string {
	var parts []string
	for _, field := range []string{"ids", "do"} {
		for _, rule := range e[field] {
			parts = append(parts, field+": "+rule)
		}
	}
	return strings.Join(parts, "; ")
}
