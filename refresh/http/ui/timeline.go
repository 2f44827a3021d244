package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// Bounds of one simulation run for a page.
const (
	// maxEntries bounds the timeline of one simulation.
	maxEntries = 200
	// chartEntries bounds the entries a chart draws; the table lists them
	// all.
	chartEntries = 48
	// chartRunsAfterSuccess is how many attempts a chart draws after the
	// first success.
	chartRunsAfterSuccess = 4
	// simulationTimeout bounds the time of one simulation.
	simulationTimeout = 3 * time.Second
	// projectionSpan is how far a projection looks ahead at least, and
	// maxProjectionSpan at most (give_up_after may ask for more).
	projectionSpan    = 8 * 24 * time.Hour
	maxProjectionSpan = 32 * 24 * time.Hour
	// successSpan is how far the projection of a success looks ahead.
	successSpan = 3 * 24 * time.Hour
)

// projection is one simulated future of a model, or of a policy preview.
type projection struct {
	Title   string
	Summary string
	Chart   *chart
	Rows    []entryRow
	// Stopped says why the timeline stopped early, if it did.
	Stopped string
	// Err says why there is no timeline.
	Err string
}

// entryRow is one timeline entry for the table.
type entryRow struct {
	scenarios.Entry
	Class string
}

// simulate runs spec under lim, bounded in time and entries. A timeline cut
// by its bound is returned with a note saying so.
func simulate(ctx context.Context, spec scenarios.Spec, lim refresh.Limits) ([]scenarios.Entry, string, error) {
	ctx, cancel := context.WithTimeout(ctx, simulationTimeout)
	defer cancel()
	timeline, err := scenarios.Run(ctx, spec, lim, scenarios.WithMaxEntries(maxEntries))
	if entries, ok := errors.AsType[*scenarios.EntriesError](err); ok {
		return timeline, fmt.Sprintf("The simulation stopped after %d events (at %s).", entries.Limit, formatUTC(entries.At)), nil
	}
	if err != nil && ctx.Err() != nil && len(timeline) > 0 {
		return timeline, "The simulation stopped after " + simulationTimeout.String() + " of computing.", nil
	}
	return timeline, "", err
}

// project returns the futures of m from now: if every attempt fails as
// its last one did, and if the next attempt succeeds. A disabled model is
// projected as if enabled now, a paused one as if resumed, and one with
// nothing planned (after the enable or the resume: an on-demand model, a
// schedule that has ended) as if triggered. history gives the attempts'
// usual length. The policies are checked against svc's global limits,
// and the limits of svc's store that cover m are in force (see rateLog
// for what the projection knows of the rate limits' starts).
func project(ctx context.Context, svc *refresh.Service, m refresh.Model, history []refresh.Attempt, now time.Time) []projection {
	policy, err := json.Marshal(m.Policy)
	if err != nil {
		return []projection{{Title: "Projected timeline", Err: "The policy could not be read: " + err.Error()}}
	}
	limits, err := svc.Store.Limits(ctx)
	if err != nil {
		return []projection{{Title: "Projected timeline", Err: "The limits could not be read: " + err.Error()}}
	}
	lim := svc.EffectiveLimits()
	state := m.State
	span := max(projectionSpan, time.Duration(m.Policy.GiveUpAfter)+24*time.Hour)
	span = min(span, maxProjectionSpan)
	base := scenarios.Spec{
		Start: now, Until: now.Add(span),
		Model: scenarios.SpecModel{ID: m.ID, Queue: m.Queue, RateKey: m.RateKey, Policy: policy, State: &state, CreatedAt: m.CreatedAt},
	}
	for _, l := range limits {
		if l.Covers(m) {
			base.Limits = append(base.Limits, l)
		}
	}
	base.Starts = rateLog(m, history, base.Limits, now)
	actions, lead := projectedActions(m, now)
	base.Actions = actions
	took := usualLength(history, time.Duration(m.Policy.Timeout))

	fail := scenarios.Behaviour{Outcome: "failure", Kind: "error", Message: "simulated failure", After: took}
	failWhat := "every attempt fails"
	if e := m.LastError; e != nil {
		fail.Kind, fail.Message = e.Kind, e.Message
		failWhat = "every attempt fails with " + e.Kind + ", as the last one did"
	}
	if fail.Kind == refresh.KindTimeout {
		fail = scenarios.Behaviour{Outcome: "timeout"}
		failWhat = "every attempt times out, as the last one did"
	}
	failing := base
	failing.Default = fail
	succeeding := base
	// Runs after a success repeat; three days of them are plenty.
	succeeding.Until = now.Add(min(span, successSpan))
	succeeding.Default = scenarios.Behaviour{Outcome: "success", After: took}

	loc := zoneOf(m)
	w := waitOf(m, base.Limits, now)
	out := []projection{
		runProjection(ctx, failing, lim, m, w, loc, lead+failWhat),
		runProjection(ctx, succeeding, lim, m, w, loc, lead+"the next attempt succeeds"),
	}
	return out
}

// rateLog returns what a projection of m knows of the logs of the rate
// limits among limits (those that cover m) at now: m's own starts of
// history within each limit's per, and, while m waits for one of them
// until a later instant, as many starts at waiting_until - per as the
// limit admits in a window, so that it admits no start before
// waiting_until, as the wait said. The other models' starts are known
// only through that wait: the projection starts m at waiting_until, as
// the first model in line.
func rateLog(m refresh.Model, history []refresh.Attempt, limits []refresh.Limit, now time.Time) []refresh.LimitStarts {
	var log []refresh.LimitStarts
	for _, l := range limits {
		if !l.Rated() {
			continue
		}
		per := time.Duration(l.Per)
		for _, a := range history {
			if a.StartedAt.Add(per).After(now) && !a.StartedAt.After(now) {
				log = append(log, refresh.LimitStarts{Limit: l.Name(), At: a.StartedAt, N: 1})
			}
		}
		if m.WaitingForSlot && m.WaitingLimit == l.Name() && m.WaitingUntil.After(now) {
			log = append(log, refresh.LimitStarts{Limit: l.Name(), At: m.WaitingUntil.Add(-per), N: l.MaxStarts})
		}
	}
	return log
}

// rateWait is a model's wait for a rate limit at the start of a
// projection.
type rateWait struct {
	at    time.Time
	limit string // the limit's String, "" for no wait
	until time.Time
}

// waitOf returns the wait of m at now for a rate limit among limits, if
// it waits for one until later.
func waitOf(m refresh.Model, limits []refresh.Limit, now time.Time) rateWait {
	if !m.WaitingForSlot || !m.WaitingUntil.After(now) {
		return rateWait{}
	}
	for _, l := range limits {
		if l.Name() == m.WaitingLimit && l.Rated() {
			return rateWait{at: now, limit: l.String(), until: m.WaitingUntil}
		}
	}
	return rateWait{}
}

// firstWait returns the model's first wait for a rate limit of timeline,
// the one at the start (w) if it waits then.
func firstWait(w rateWait, timeline []scenarios.Entry) rateWait {
	if w.limit != "" {
		return w
	}
	for _, e := range timeline {
		if e.Event == refresh.EventWait && !e.WaitingUntil.IsZero() {
			return rateWait{at: e.At, limit: e.Reason, until: e.WaitingUntil}
		}
	}
	return rateWait{}
}

// projectedActions returns the actions a projection of m starts with at
// now, and the start of its title ("If ... and "). A trigger also enables
// a disabled model, so a disabled model with nothing to plan once enabled
// is triggered instead; a paused one is resumed, then triggered.
func projectedActions(m refresh.Model, now time.Time) ([]scenarios.Action, string) {
	_, next := m.Next(now)
	idle := !m.Running() && m.RefreshAt.IsZero()
	act := func(do ...string) []scenarios.Action {
		out := make([]scenarios.Action, len(do))
		for i, d := range do {
			out[i] = scenarios.Action{At: now, Do: d}
		}
		return out
	}
	switch {
	case m.Disabled() && !next:
		return act(refresh.ActionTrigger), "If triggered now (which enables it) and "
	case m.Disabled():
		return act(refresh.ActionEnable), "If enabled now and "
	case m.Paused && idle:
		return act(refresh.ActionResume, refresh.ActionTrigger), "If resumed and triggered now and "
	case m.Paused:
		return act(refresh.ActionResume), "If resumed now and "
	case idle:
		return act(refresh.ActionTrigger), "If triggered now and "
	}
	return nil, "If "
}

// runProjection simulates spec, which starts when m waits as w says, and
// draws it.
func runProjection(ctx context.Context, spec scenarios.Spec, lim refresh.Limits, m refresh.Model, w rateWait, loc *time.Location, title string) projection {
	p := projection{Title: title}
	timeline, stopped, err := simulate(ctx, spec, lim)
	if err != nil {
		p.Err = simulationError(err)
		return p
	}
	p.Stopped = stopped
	p.Rows = rows(timeline)
	p.Summary = summarize(timeline, loc)
	if fw := firstWait(w, timeline); fw.limit != "" {
		p.Summary = fmt.Sprintf("Waits %s for %s until %s. %s", waitFrom(fw, spec.Start, loc), fw.limit, formatAt(fw.until, loc), p.Summary)
	}
	p.Chart = buildChart(chartInput{entries: forChart(timeline), start: spec.Start, running: m.State, waiting: w.limit, waitingUntil: w.until,
		next: m.Next, loc: loc, startLabel: "now"})
	return p
}

// waitFrom says when a wait of a projection from start begins: "now", or
// "from" its time.
func waitFrom(w rateWait, start time.Time, loc *time.Location) string {
	if w.at.Equal(start) {
		return "now"
	}
	return "from " + formatAt(w.at, loc)
}

// simulationError writes why a simulation did not run.
func simulationError(err error) string {
	if v, ok := asValidation(err); ok {
		var s []string
		for _, f := range v.Fields {
			s = append(s, f.Field+": "+f.Rule)
		}
		return "The simulator refused it: " + strings.Join(s, "; ")
	}
	return "The simulation failed: " + err.Error()
}

// usualLength returns the median length of the finished attempts of
// history, or a minute without any, kept below timeout.
func usualLength(history []refresh.Attempt, timeout time.Duration) time.Duration {
	var lengths []time.Duration
	for _, a := range history {
		if !a.FinishedAt.IsZero() && (a.Outcome == refresh.OutcomeSuccess || a.Outcome == refresh.OutcomeFailure) {
			lengths = append(lengths, a.FinishedAt.Sub(a.StartedAt))
		}
	}
	d := time.Minute
	if len(lengths) > 0 {
		slices.Sort(lengths)
		d = lengths[len(lengths)/2].Round(time.Second)
	}
	if timeout > 0 && d >= timeout {
		d = timeout / 2
	}
	return max(d, 0)
}

// forChart returns the entries a chart draws: up to the model's disabling,
// at most chartRunsAfterSuccess starts after its first success, and at
// most chartEntries entries.
func forChart(timeline []scenarios.Entry) []scenarios.Entry {
	succeeded, after := false, 0
	for i, e := range timeline {
		if i == chartEntries {
			return timeline[:i]
		}
		switch {
		case e.Event == refresh.EventFailure && e.Decision == refresh.DecisionDisable,
			e.Event == refresh.EventTimeout && e.Decision == refresh.DecisionDisable:
			return timeline[:i+1]
		case e.Event == refresh.EventSuccess:
			succeeded = true
		case e.Event == refresh.EventStart && succeeded:
			if after++; after > chartRunsAfterSuccess {
				return timeline[:i]
			}
		}
	}
	return timeline
}

// rows returns the table rows of a timeline.
func rows(timeline []scenarios.Entry) []entryRow {
	out := make([]entryRow, len(timeline))
	for i, e := range timeline {
		class := "idle"
		switch e.Event {
		case refresh.EventStart:
			class = "running"
		case refresh.EventSuccess:
			class = "ok"
		case refresh.EventFailure, refresh.EventTimeout:
			class = "failing"
			if e.Decision == refresh.DecisionDisable {
				class = "disabled"
			}
		}
		out[i] = entryRow{Entry: e, Class: class}
	}
	return out
}

// summarize says in a sentence or two how a timeline ends.
func summarize(timeline []scenarios.Entry, loc *time.Location) string {
	if len(timeline) == 0 {
		return "Nothing happens: no attempt is planned."
	}
	failures, aligned, retries := 0, 0, 0
	for _, e := range timeline {
		switch e.Event {
		case refresh.EventFailure, refresh.EventTimeout:
			failures++
			switch e.Decision {
			case refresh.DecisionRetryAligned:
				aligned++
				retries++
			case refresh.DecisionRetry:
				retries++
			case refresh.DecisionDisable:
				s := fmt.Sprintf("Disabled %s after %s", formatAt(e.At, loc), plural(failures, "failed attempt"))
				if retries > 0 {
					s += fmt.Sprintf(" (%s, %d aligned with the schedule)", plural(retries, "retry"), aligned)
				}
				s += "."
				if e.Reason != "" {
					s += " The customer reads: “" + e.Reason + "”"
				}
				return s
			}
		case refresh.EventSuccess:
			s := fmt.Sprintf("Succeeds %s", formatAt(e.At, loc))
			if failures > 0 {
				s += " after " + plural(failures, "failure")
			}
			var next []string
			for _, f := range timeline {
				if f.Event == refresh.EventStart && f.At.After(e.At) && len(next) < 3 {
					next = append(next, formatShort(f.At, loc))
				}
			}
			if len(next) > 0 {
				s += "; then runs " + strings.Join(next, ", ")
			} else {
				s += "; then nothing is planned (it runs when triggered)"
			}
			return s + "."
		}
	}
	last := timeline[len(timeline)-1]
	s := fmt.Sprintf("%s in a row (%d aligned with the schedule), and still not disabled at %s", plural(failures, "failure"), aligned, formatAt(last.At, loc))
	if !last.RefreshAt.IsZero() {
		s += "; next start " + formatAt(last.RefreshAt, loc)
	}
	return s + "."
}
