package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// Bounds of a replay on a model's page.
const (
	// defaultReplayDays is the period a replay form proposes.
	defaultReplayDays = 30
	// replayHistory is how many of a model's newest attempts a replay
	// reads; a longer period is replayed from the oldest one read, and the
	// page says so.
	replayHistory = 5000
	// replayEntries bounds the replayed timeline.
	replayEntries = 10_000
	// replayTimeout bounds the time of the simulation.
	replayTimeout = 5 * time.Second
)

// replayForm is the form of a model's replay.
type replayForm struct {
	Policy string
	Days   string
}

// replayPage is a model's replay: the form, and once run, what was
// recorded and what the proposed policy would have done.
type replayPage struct {
	*frame
	M      refresh.Model
	Form   replayForm
	Errors fieldErrors
	Result *replayResult
}

// replayResult is a replay, drawn.
type replayResult struct {
	Note               string
	Recorded, Replayed projection
	RecordedTally      scenarios.Tally
	ReplayTally        scenarios.Tally
	// Window says which part of the period the charts show, if not all.
	Window string
	Zone   *time.Location
}

func (h *Handler) handleReplayForm(w http.ResponseWriter, r *http.Request, v *viewer) {
	m, ok := h.replayModel(w, r, v)
	if !ok {
		return
	}
	p := replayPage{frame: h.frame(w, r, v, "Replay "+m.ID), M: m,
		Form: replayForm{Policy: indentJSON(m.Policy), Days: strconv.Itoa(defaultReplayDays)}}
	p.Nav = "models"
	if d := strings.TrimSpace(r.URL.Query().Get("days")); d != "" {
		p.Form.Days = d
		if _, err := replayDays(d); err != "" {
			p.Errors.add("days", err)
		}
	}
	h.render(w, http.StatusOK, "replay", p)
}

func (h *Handler) handleReplay(w http.ResponseWriter, r *http.Request, v *viewer) {
	m, ok := h.replayModel(w, r, v)
	if !ok {
		return
	}
	p := replayPage{frame: h.frame(w, r, v, "Replay "+m.ID), M: m,
		Form: replayForm{Policy: r.PostForm.Get("policy"), Days: strings.TrimSpace(r.PostForm.Get("days"))}}
	p.Nav = "models"
	days, rule := replayDays(p.Form.Days)
	if rule != "" {
		p.Errors.add("days", rule)
	}
	policy := bytes.TrimSpace([]byte(p.Form.Policy))
	switch {
	case len(policy) == 0:
		p.Errors.add("policy", `is required: a JSON object such as {"schedule": "FREQ=DAILY;BYHOUR=6", "timeout": "1h"}`)
	case len(policy) > maxPolicyBytes:
		p.Errors.add("policy", fmt.Sprintf("must be at most %d bytes, got %d", maxPolicyBytes, len(policy)))
	}
	if len(p.Errors) > 0 {
		h.render(w, http.StatusBadRequest, "replay", p)
		return
	}
	ctx := r.Context()
	history, err := h.svc.Store.History(ctx, m.ID, time.Time{}, replayHistory)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	now := p.Now.UTC().Truncate(time.Second)
	rec := scenarios.Recording{Model: m, Attempts: history, Since: now.AddDate(0, 0, -days), Until: now,
		Truncated: len(history) >= replayHistory}
	lim := h.svc.EffectiveLimits()
	sctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	res, err := scenarios.RunReplay(sctx, rec, policy, lim, scenarios.WithMaxEntries(replayEntries))
	stopped := ""
	if entries, ok := errors.AsType[*scenarios.EntriesError](err); ok {
		stopped, err = fmt.Sprintf("The replay stopped after %d events (at %s).", entries.Limit, formatUTC(entries.At)), nil
	} else if err != nil && sctx.Err() != nil && ctx.Err() == nil {
		stopped, err = "The replay stopped after "+replayTimeout.String()+" of computing.", nil
	}
	if none, ok := errors.AsType[*scenarios.NoHistoryError](err); ok {
		p.Errors.add("days", fmt.Sprintf("%s has no recorded attempt in the last %s (since %s): there is nothing to replay",
			m.ID, plural(days, "day"), formatAt(none.From, zoneOf(m))))
		h.render(w, http.StatusOK, "replay", p)
		return
	}
	if err != nil {
		if !p.Errors.fromValidation(err, replayField) {
			h.failErr(w, r, v, err)
			return
		}
		h.render(w, http.StatusBadRequest, "replay", p)
		return
	}
	proposed, err := refresh.ParsePolicy(policy, lim) // checked by RunReplay
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	replayed := refresh.Model{ID: m.ID, Policy: proposed, CreatedAt: m.CreatedAt}
	p.Result = drawReplay(res, m, replayed, stopped)
	h.render(w, http.StatusOK, "replay", p)
}

// replayModel returns the model of a replay's path, or answers the error.
func (h *Handler) replayModel(w http.ResponseWriter, r *http.Request, v *viewer) (refresh.Model, bool) {
	id := r.PathValue("id")
	if !refresh.ValidID(id) {
		h.fail(w, r, v, http.StatusBadRequest, "id: "+refresh.IDRule)
		return refresh.Model{}, false
	}
	m, err := h.svc.Store.Get(r.Context(), id)
	if err != nil {
		h.failErr(w, r, v, err)
		return refresh.Model{}, false
	}
	return m, true
}

// replayDays reads the days of a replay, or the rule they break.
func replayDays(s string) (int, string) {
	maxDays := int(scenarios.MaxReplaySpan / (24 * time.Hour))
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxDays {
		return 0, fmt.Sprintf("must be a whole number of days from 1 to %d, got %q", maxDays, shorten(s, 40))
	}
	return n, ""
}

// replayField files an error of RunReplay under a field of the form.
func replayField(field string) (string, string) {
	switch {
	case strings.HasPrefix(field, "policy"):
		return "policy", field
	case field == "since":
		return "days", ""
	}
	return "form", field
}

// drawReplay returns the page's view of res: m is the real model, replayed
// the model under the proposed policy.
func drawReplay(res scenarios.Replayed, m, replayed refresh.Model, stopped string) *replayResult {
	loc := zoneOf(m)
	out := &replayResult{Note: res.CoverageNote(), RecordedTally: res.RecordedTally, ReplayTally: res.ReplayTally, Zone: loc}
	from, until := chartWindow(res.Recorded, res.Replay)
	if len(within(res.Recorded, from, until)) < len(res.Recorded) || len(within(res.Replay, from, until)) < len(res.Replay) {
		out.Window = fmt.Sprintf("The charts show %s to %s; the tables under them list every event.", formatAt(from, loc), formatAt(until, loc))
	}
	draw := func(title string, timeline []scenarios.Entry, next func(time.Time) (time.Time, bool)) projection {
		return projection{
			Title:   title,
			Summary: tallySentence(scenarios.TallyOf(timeline), loc),
			Rows:    rows(timeline),
			Chart:   buildChart(chartInput{entries: within(timeline, from, until), start: from, next: next, loc: loc}),
		}
	}
	out.Recorded = draw("What happened (recorded)", res.Recorded, m.Next)
	out.Replayed = draw("Under the proposed policy (replayed)", res.Replay, replayed.Next)
	out.Replayed.Stopped = stopped
	return out
}

// chartWindow returns the part of a replay that its charts show: up to
// the later of the two timelines' first disablings (or their ends), and
// back from there as far as each chart keeps at most chartEntries entries.
func chartWindow(recorded, replayed []scenarios.Entry) (time.Time, time.Time) {
	var until time.Time
	for _, tl := range [][]scenarios.Entry{recorded, replayed} {
		for _, e := range tl {
			until = later(until, e.At)
			if e.Decision == refresh.DecisionDisable {
				break
			}
		}
	}
	var lower, bound time.Time
	for _, tl := range [][]scenarios.Entry{recorded, replayed} {
		in := within(tl, time.Time{}, until)
		if len(in) == 0 {
			continue
		}
		if lower.IsZero() || in[0].At.Before(lower) {
			lower = in[0].At
		}
		if len(in) > chartEntries {
			bound = later(bound, in[len(in)-chartEntries].At)
		}
	}
	return later(lower, bound), until
}

// within returns the entries of timeline from from to until.
func within(timeline []scenarios.Entry, from, until time.Time) []scenarios.Entry {
	var out []scenarios.Entry
	for _, e := range timeline {
		if !e.At.Before(from) && !e.At.After(until) {
			out = append(out, e)
		}
	}
	return out
}

// tallySentence says what a timeline counts.
func tallySentence(t scenarios.Tally, loc *time.Location) string {
	s := fmt.Sprintf("%s, %s", plural(t.Attempts, "attempt"), plural(t.Retries, "retry"))
	if len(t.Disabled) == 0 {
		return s + "; never disabled."
	}
	var at []string
	for _, d := range t.Disabled {
		at = append(at, formatAt(d, loc))
	}
	return s + "; disabled " + strings.Join(at, ", ") + "."
}
