package ui

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// counts are the models of one state count.
type counts struct {
	Total, Running, Failing, Disabled, Paused int
}

func (c *counts) add(m refresh.Model) {
	c.Total++
	switch {
	case m.Disabled():
		c.Disabled++
	case m.ConsecutiveFailures > 0:
		c.Failing++
	}
	if m.Running() {
		c.Running++
	}
	if m.Paused {
		c.Paused++
	}
}

// queueRow is one queue of the overview.
type queueRow struct {
	Name string
	counts
	// Depth is the number of jobs waiting, -1 when unknown.
	Depth int64
}

// scan is what the overview counted.
type scan struct {
	All    counts
	Queues []queueRow
	// MoreQueues counts the queues left out past maxQueues.
	MoreQueues int
	// Attention are the first disabled and failing models met.
	Attention []refresh.Model
	// Scanned is how many models were looked at; Partial is set when the
	// scan stopped at its limit with models left.
	Scanned int
	Partial bool
	Limit   int
}

// attentionRows bounds the models the overview lists as needing attention.
const attentionRows = 10

// scanModels counts the models of prefix ("" for all), in id order, up to
// limit of them, in pages of 1,000.
func scanModels(ctx context.Context, store refresh.Store, prefix string, limit int) (scan, error) {
	s := scan{Limit: limit}
	byQueue := map[string]*queueRow{}
	f := refresh.Filter{Limit: 1000, NoPayload: true}
	for {
		page, err := store.List(ctx, f)
		if err != nil {
			return s, err
		}
		for _, m := range page {
			if s.Scanned == limit {
				s.Partial = true
				break
			}
			s.Scanned++
			if !strings.HasPrefix(m.ID, prefix) {
				continue
			}
			s.All.add(m)
			q := byQueue[m.Queue]
			if q == nil {
				q = &queueRow{Name: m.Queue, Depth: -1}
				byQueue[m.Queue] = q
			}
			q.add(m)
			if (m.Disabled() || m.ConsecutiveFailures > 0) && len(s.Attention) < attentionRows {
				s.Attention = append(s.Attention, m)
			}
		}
		if s.Partial || len(page) < f.Limit {
			break
		}
		f.After = page[len(page)-1].ID
	}
	for _, q := range byQueue {
		s.Queues = append(s.Queues, *q)
	}
	// The busiest queues first: those with the most models.
	slices.SortFunc(s.Queues, func(a, b queueRow) int {
		if a.Total != b.Total {
			return b.Total - a.Total
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(s.Queues) > maxQueues {
		s.MoreQueues = len(s.Queues) - maxQueues
		s.Queues = s.Queues[:maxQueues]
	}
	return s, nil
}

// overviewPage is the overview.
type overviewPage struct {
	*frame
	Scan scan
	// Depths is set when queue depths are known.
	Depths bool
	// Dead lists the newest dead letters; DeadMore is set when there are
	// more. DeadShown is set when the viewer may see them.
	DeadShown bool
	Dead      []refresh.DeadLetter
	DeadMore  bool
	// Events are the latest lifecycle events the viewer may see.
	EventsShown bool
	Events      []refresh.Event
	// Problems are the parts that could not be read, with why.
	Problems []string
}

// deadShown is how many dead letters the overview lists.
const deadShown = 5

func (h *Handler) handleOverview(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx := r.Context()
	s, err := scanModels(ctx, h.svc.Store, v.Prefix, h.scanLimit)
	if err != nil {
		h.failErr(w, r, v, err)
		return
	}
	p := overviewPage{frame: h.frame(w, r, v, "Overview"), Scan: s}
	p.Nav, p.Refresh = "overview", 10
	if h.queues != nil && v.Whole() && len(s.Queues) > 0 {
		names := make([]string, len(s.Queues))
		for i, q := range s.Queues {
			names[i] = q.Name
		}
		depths, err := h.queues.Depths(ctx, names)
		if err != nil {
			h.log.Warn("dashboard: read queue depths", "err", err)
			p.Problems = append(p.Problems, "Queue depths could not be read from Redis.")
		} else {
			p.Depths = true
			for i := range p.Scan.Queues {
				p.Scan.Queues[i].Depth = depths[p.Scan.Queues[i].Name]
			}
		}
	}
	if h.dead != nil && v.CanAdmin() {
		p.DeadShown = true
		dead, next, err := h.dead.DeadLetters(ctx, "", deadShown)
		if err != nil {
			h.log.Warn("dashboard: read dead letters", "err", err)
			p.Problems = append(p.Problems, "Dead letters could not be read from Redis.")
		}
		p.Dead, p.DeadMore = dead, next != ""
	}
	if h.events != nil {
		p.EventsShown = true
		n := recentEvents
		if !v.Whole() {
			n = eventsScanned
		}
		events, err := h.events.RecentEvents(ctx, n)
		if err != nil {
			h.log.Warn("dashboard: read events", "err", err)
			p.Problems = append(p.Problems, "Lifecycle events could not be read from Redis.")
		}
		for _, e := range events {
			if v.Owns(e.ModelID) && len(p.Events) < recentEvents {
				p.Events = append(p.Events, e)
			}
		}
	}
	h.render(w, http.StatusOK, "overview", p)
}

// eventLabel names an event for a person.
func eventLabel(e refresh.Event) string {
	switch e.Type {
	case refresh.EventFailure, refresh.EventTimeout:
		switch e.Decision {
		case refresh.DecisionDisable:
			return e.Type + " → disabled"
		case refresh.DecisionRetryAligned:
			return e.Type + " → retry at the next scheduled run"
		case refresh.DecisionWaitNext:
			return e.Type + " → wait for the next round"
		case refresh.DecisionRetry:
			if e.Delay > 0 {
				return e.Type + " → retry in " + formatDuration(e.Delay)
			}
			return e.Type + " → retry at once"
		}
	case refresh.EventStart:
		return "attempt started"
	}
	return e.Type
}

// eventClass is the colour of an event.
func eventClass(e refresh.Event) string {
	switch e.Type {
	case refresh.EventSuccess, refresh.EventEnable:
		return "ok"
	case refresh.EventFailure, refresh.EventTimeout:
		if e.Decision == refresh.DecisionDisable {
			return "disabled"
		}
		return "failing"
	case refresh.EventStart:
		return "running"
	case refresh.EventPause:
		return "paused"
	}
	return "idle"
}
