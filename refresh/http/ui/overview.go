package ui

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// queueRow is one queue of the overview.
type queueRow struct {
	Name string
	// The counts: each model in one state, by precedence.
	refresh.ModelCounts
	// Depth is the number of jobs waiting, -1 when unknown.
	Depth int64
}

// scan is what the overview counted.
type scan struct {
	All    refresh.ModelCounts
	Queues []queueRow
	// MoreQueues is set when queues were left out past maxQueues.
	MoreQueues bool
	// Attention are the first disabled and failing models counted.
	Attention []refresh.Model
	// Partial is set when there are more than Limit models: the counts
	// are those of the first Limit, by id.
	Partial bool
	Limit   int
}

// attentionRows bounds the models the overview lists as needing attention.
const attentionRows = 10

// scanModels counts the first limit models of prefix ("" for all), in id
// order, and finds the first disabled and failing ones among them: three
// reads of the store, each of at most limit+1 models of prefix's range,
// whatever the store holds besides.
func scanModels(ctx context.Context, store refresh.Store, prefix string, limit int) (scan, error) {
	s := scan{Limit: limit}
	c, err := store.Census(ctx, refresh.Filter{Prefix: prefix, Limit: limit}, maxQueues+1)
	if err != nil {
		return s, err
	}
	s.All, s.Partial = c.All, c.More
	for name, qc := range c.Queues {
		s.Queues = append(s.Queues, queueRow{Name: name, ModelCounts: qc, Depth: -1})
	}
	// The busiest queues first: those with the most models.
	slices.SortFunc(s.Queues, func(a, b queueRow) int {
		if a.Total() != b.Total() {
			return cmp.Compare(b.Total(), a.Total())
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(s.Queues) > maxQueues {
		s.MoreQueues, s.Queues = true, s.Queues[:maxQueues]
	}
	if c.Last == "" {
		return s, nil
	}
	// Among the models counted: the disabled ones, and the others that
	// fail, merged in id order.
	yes, no := true, false
	for _, f := range []refresh.Filter{{Disabled: &yes}, {Disabled: &no, Failing: &yes}} {
		f.Prefix, f.Until, f.Limit, f.NoPayload = prefix, c.Last, attentionRows, true
		models, err := store.List(ctx, f)
		if err != nil {
			return s, err
		}
		s.Attention = append(s.Attention, models...)
	}
	slices.SortFunc(s.Attention, func(a, b refresh.Model) int { return strings.Compare(a.ID, b.ID) })
	s.Attention = s.Attention[:min(len(s.Attention), attentionRows)]
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
