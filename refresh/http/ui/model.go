package ui

import (
	"net/http"
	"net/url"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// action is a button of a model's page.
type action struct {
	Name  string
	Label string
	Hint  string
	Class string
}

// actionsFor returns the actions that would change m, in the order shown.
func actionsFor(m refresh.Model) []action {
	var out []action
	out = append(out, action{refresh.ActionTrigger, "Trigger now", "Start an attempt now; clears a disabled state and the failure streak, and supersedes a running attempt.", "primary"})
	if m.Disabled() {
		out = append(out, action{refresh.ActionEnable, "Enable", "Clear the disabled state and plan the next scheduled run.", ""})
	}
	if m.Paused {
		out = append(out, action{refresh.ActionResume, "Resume", "Let attempts start again; an overdue run starts at once.", ""})
	} else {
		out = append(out, action{refresh.ActionPause, "Pause", "Stop new attempts from starting; a running one still finishes.", ""})
	}
	if !m.Disabled() && (m.Running() || m.AttemptNo > 0) {
		out = append(out, action{refresh.ActionCancel, "Cancel", "Drop the running attempt and any pending retry; the next scheduled run stays.", "danger"})
	}
	return out
}

// modelPage is one model's page.
type modelPage struct {
	*frame
	M        refresh.Model
	Zone     *time.Location
	State    state
	NextRuns []time.Time
	Attempts []refresh.Attempt
	Actions  []action
	// Projections are the simulated futures of the model.
	Projections []projection
	PreviewURL  string

	// Upstreams are the model's upstreams with their status, and
	// WaitingFor the customer-facing sentence of what it waits for ("" when
	// its condition holds or it has none).
	Upstreams  []upstreamRow
	WaitingFor string
	// OverdueAt is when the freshness promise (max_age) breaks without a
	// success, zero without one; Overdue reports whether it has.
	OverdueAt time.Time
	Overdue   bool
	// SnoozeEnds is when a snoozing round gives up (snoozed_since +
	// max_snooze).
	SnoozeEnds time.Time
	// SpreadOffset is the shift of the scheduled occurrences (policy
	// spread), 0 without one.
	SpreadOffset time.Duration
}

// upstreamRow is one upstream on a model's page.
type upstreamRow struct {
	ID string
	// Status is changed, waiting, disabled, paused or missing; Class its
	// colour and Note what it means.
	Status        string
	Class         string
	Note          string
	LastChangedAt time.Time
}

// Exists reports whether the upstream is a model (one with a page).
func (u upstreamRow) Exists() bool { return u.Status != refreshhttp.UpstreamMissing }

// upstreamRows returns the rows of m's upstreams and what m waits for,
// from the statuses the API shows (ups: the upstreams that exist).
func upstreamRows(m refresh.Model, ups map[string]refresh.Upstream) ([]upstreamRow, string) {
	sts, waiting := refreshhttp.UpstreamStatuses(m, ups)
	rows := make([]upstreamRow, 0, len(sts))
	for _, st := range sts {
		r := upstreamRow{ID: st.ID, Status: st.Status, LastChangedAt: time.Time(st.LastChangedAt)}
		switch st.Status {
		case refreshhttp.UpstreamChanged:
			r.Class, r.Note = "ok", "Changed since this model's last success."
		case refreshhttp.UpstreamWaiting:
			r.Class, r.Note = "idle", "Not changed since this model's last success; waiting for it to refresh."
		case refreshhttp.UpstreamDisabled:
			r.Class, r.Note = "disabled", "Its refresh is disabled: "+string(st.DisabledReason)
		case refreshhttp.UpstreamPaused:
			r.Class, r.Note = "paused", "Its refresh is paused."
		default:
			r.Class, r.Note = "failing", "No model has this id."
		}
		rows = append(rows, r)
	}
	return rows, waiting
}

// nextRuns is how many planned runs a model's page lists.
const nextRuns = 5

func (h *Handler) handleModel(w http.ResponseWriter, r *http.Request, v *viewer) {
	id := r.PathValue("id")
	if !refresh.ValidID(id) {
		h.fail(w, r, v, http.StatusBadRequest, "id: "+refresh.IDRule)
		return
	}
	ctx := r.Context()
	m, err := h.svc.Store.Get(ctx, id)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	history, err := h.svc.Store.History(ctx, id, time.Time{}, historyLimit)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	p := modelPage{frame: h.frame(w, r, v, m.ID), M: m, Zone: zoneOf(m), State: stateOf(m), Attempts: history,
		Actions: actionsFor(m), PreviewURL: h.base + "/preview?model=" + url.QueryEscape(m.ID)}
	p.Nav, p.Refresh = "models", 10
	for _, t := range refreshhttp.NextRuns(m, p.Now, nextRuns) {
		p.NextRuns = append(p.NextRuns, time.Time(t))
	}
	if len(m.Upstreams) > 0 {
		ups, err := h.svc.Store.Upstreams(ctx, m.Upstreams)
		if err != nil {
			h.failErr(w, r, v, err)
			return
		}
		p.Upstreams, p.WaitingFor = upstreamRows(m, ups)
	}
	p.Projections = project(ctx, h.svc, m, history, p.Now)
	p.OverdueAt, _ = m.OverdueAt()
	p.Overdue = m.Overdue(p.Now)
	if !m.SnoozedSince.IsZero() {
		p.SnoozeEnds = m.SnoozedSince.Add(m.Policy.SnoozeBound())
	}
	if m.Policy.Spread > 0 {
		p.SpreadOffset = m.SpreadOffset()
	}
	h.render(w, http.StatusOK, "model", p)
}

// actionWords are the past tense of the actions, for the message after one.
var actionWords = map[string]string{
	refresh.ActionTrigger: "Triggered", refresh.ActionEnable: "Enabled", refresh.ActionPause: "Paused",
	refresh.ActionResume: "Resumed", refresh.ActionCancel: "Cancelled",
}

// handleAct applies an action of a model's page, then shows the page again
// with what it did.
func (h *Handler) handleAct(w http.ResponseWriter, r *http.Request, v *viewer) {
	id, name := r.PathValue("id"), r.PathValue("action")
	word, ok := actionWords[name]
	if !ok {
		h.fail(w, r, v, http.StatusNotFound, "There is no action "+shorten(name, 40)+": want trigger, enable, pause, resume or cancel.")
		return
	}
	if !refresh.ValidID(id) {
		h.fail(w, r, v, http.StatusBadRequest, "id: "+refresh.IDRule)
		return
	}
	_, d, err := h.svc.Act(v.audited(r.Context()), id, name)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	h.log.Info("dashboard action", "token", v.Name, "model_id", id, "action", name, "changed", !d.Unchanged)
	if d.Unchanged {
		h.setFlash(w, r, "info", "Nothing changed: "+d.Why+".")
	} else {
		h.setFlash(w, r, "ok", word+" "+id+": "+d.Why+".")
	}
	http.Redirect(w, r, h.base+"/models/"+url.PathEscape(id), http.StatusSeeOther)
}
