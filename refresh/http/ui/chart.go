package ui

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// chart is a gantt chart of a timeline as SVG shapes, drawn on the
// server. Its time axis is compressed: each stretch between two moments
// that matter is drawn with a width that grows with the logarithm of its
// length, so a one-minute attempt stays visible beside a ten-hour wait;
// the times are written on the axis and long stretches say how long they
// are.
type chart struct {
	Width, Height float64
	Rects         []svgRect
	Lines         []svgLine
	Texts         []svgText
	Marks         []svgMark
}

type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type svgText struct {
	X, Y   float64
	Anchor string
	Class  string
	Text   string
	Title  string
}

// svgMark is a polygon: a diamond for a scheduled run, a triangle for an
// action.
type svgMark struct {
	Points string
	Class  string
	Title  string
}

// Geometry of a chart, in SVG units.
const (
	chartWidth  = 960.0
	chartLeft   = 92.0 // the row names
	chartRight  = 16.0
	rowSchedule = 24.0 // centre of the schedule row
	rowBars     = 46.0 // top of the attempt bars
	barHeight   = 24.0
	rowDecision = 92.0 // first line of the decision labels
	decisionGap = 15.0
	rowAxis     = 128.0
	chartHeight = 172.0
	minBarWidth = 6.0
	labelGap    = 62.0 // the least distance between two axis labels
)

// bar is one attempt: from its start to its end.
type bar struct {
	start, end time.Time
	no         int
	class      string // success, failure, timeout, superseded, running
	what       string
}

// chartInput is what a chart shows.
type chartInput struct {
	entries []scenarios.Entry
	// start is when the timeline starts (now, for a projection).
	start time.Time
	// running is the attempt in flight at start, if any (StartedAt set).
	running refresh.State
	// waiting is the rate limit the model waits for at start (a limit's
	// String), "" for none; it waits until waitingUntil.
	waiting      string
	waitingUntil time.Time
	// next returns the schedule's next occurrence after t, if any.
	next func(t time.Time) (time.Time, bool)
	loc  *time.Location
	// startLabel names the start line ("now"), "" for none.
	startLabel string
}

// buildChart draws in.
func buildChart(in chartInput) *chart {
	loc := in.loc
	var bars []bar
	var open *bar
	if in.running.AttemptUID != "" {
		open = &bar{start: in.running.StartedAt, no: in.running.AttemptNo, end: in.running.DeadlineAt}
	}
	type decision struct {
		at    time.Time
		text  string
		class string
		title string
		plan  time.Time // the planned start it leads to, zero for none
	}
	var decisions []decision
	// wait is a wait for a rate limit from at until the limit admits the
	// start: a connector to the start it plans.
	wait := func(at, until time.Time, limit string) {
		decisions = append(decisions, decision{at: at, class: "d-wait", plan: until,
			text:  "waits until " + until.In(loc).Format("15:04:05"),
			title: fmt.Sprintf("waits from %s for %s until %s (%s)", formatAt(at, loc), limit, formatAt(until, loc), formatUTC(until))})
	}
	if in.waiting != "" && in.waitingUntil.After(in.start) {
		wait(in.start, in.waitingUntil, in.waiting)
	}
	type action struct {
		at   time.Time
		what string
	}
	var actions []action
	var disabledAt time.Time
	end := in.start
	closeBar := func(at time.Time, class, what string) {
		if open == nil {
			return
		}
		open.end, open.class, open.what = at, class, what
		bars = append(bars, *open)
		open = nil
	}
	for _, e := range in.entries {
		end = later(end, e.At)
		switch e.Event {
		case refresh.EventStart:
			closeBar(e.At, "superseded", "superseded")
			open = &bar{start: e.At, no: e.AttemptNo, end: e.DeadlineAt}
		case refresh.EventSuccess:
			closeBar(e.At, "success", "succeeded")
		case refresh.EventFailure, refresh.EventTimeout:
			what := "failed"
			if e.Kind != "" {
				what += " (" + e.Kind + ")"
			}
			class := "failure"
			if e.Event == refresh.EventTimeout {
				what, class = "timed out", "timeout"
			}
			closeBar(e.At, class, what)
			d := decision{at: e.At, class: "d-" + e.Decision}
			switch e.Decision {
			case refresh.DecisionRetry:
				d.text = "retry in " + formatDuration(e.RefreshAt.Sub(e.At))
				if !e.RefreshAt.After(e.At) {
					d.text = "retry at once"
				}
				d.plan = e.RefreshAt
			case refresh.DecisionRetryAligned:
				d.text = "aligned: " + e.RefreshAt.In(loc).Format("15:04")
				d.plan = e.RefreshAt
			case refresh.DecisionWaitNext:
				d.text = "next round " + e.RefreshAt.In(loc).Format("15:04")
				d.plan = e.RefreshAt
			case refresh.DecisionDisable:
				d.text = "disabled"
				disabledAt = e.At
			}
			d.title = fmt.Sprintf("%s at %s (%s): %s", e.Event, formatAt(e.At, loc), formatUTC(e.At), e.Decision)
			if e.Reason != "" {
				d.title += ": " + e.Reason
			}
			decisions = append(decisions, d)
		case refresh.EventWait:
			if !e.WaitingUntil.IsZero() {
				wait(e.At, e.WaitingUntil, e.Reason)
			}
		case refresh.EventTrigger, refresh.EventCancel:
			closeBar(e.At, "superseded", e.Event+"ed")
			actions = append(actions, action{e.At, e.Event})
		case refresh.EventEnable, refresh.EventPause, refresh.EventResume:
			actions = append(actions, action{e.At, e.Event})
		}
	}
	if open != nil {
		open.class, open.what = "running", "running until its deadline"
		bars = append(bars, *open)
	}
	begin := in.start
	for _, b := range bars {
		begin = earlier(begin, b.start)
		end = later(end, b.end)
	}
	// Show the next planned start after the last entry, if there is one.
	var planned time.Time
	if n := len(in.entries); n > 0 && open == nil && disabledAt.IsZero() {
		if p := in.entries[n-1].RefreshAt; p.After(end) {
			planned = p
			end = p
		}
	}
	if !end.After(begin) {
		end = begin.Add(time.Hour)
	}
	// Pad the end by a tenth of the last stretch, at least a minute.
	end = end.Add(max(time.Minute, end.Sub(begin)/40))

	var runs []time.Time
	if in.next != nil {
		t := begin.Add(-time.Nanosecond)
		for len(runs) < 60 {
			n, ok := in.next(t)
			if !ok || n.After(end) {
				break
			}
			runs = append(runs, n)
			t = n
		}
	}

	// The moments that matter, and the axis through them.
	keys := []time.Time{begin, end, in.start}
	for _, b := range bars {
		keys = append(keys, b.start, b.end)
	}
	for _, d := range decisions {
		keys = append(keys, d.at)
	}
	keys = append(keys, runs...)
	if !planned.IsZero() {
		keys = append(keys, planned)
	}
	ax := newAxis(keys, chartLeft, chartWidth-chartRight)

	c := &chart{Width: chartWidth, Height: chartHeight}
	c.Texts = append(c.Texts,
		svgText{X: 8, Y: rowSchedule + 4, Class: "row", Text: "schedule"},
		svgText{X: 8, Y: rowBars + barHeight/2 + 4, Class: "row", Text: "attempts"},
		svgText{X: 8, Y: rowDecision + 4, Class: "row", Text: "decisions"})
	c.Lines = append(c.Lines,
		svgLine{X1: chartLeft, Y1: rowSchedule, X2: chartWidth - chartRight, Y2: rowSchedule, Class: "lane"},
		svgLine{X1: chartLeft, Y1: rowAxis, X2: chartWidth - chartRight, Y2: rowAxis, Class: "axis"})

	// Long stretches say how long they are.
	for i := 1; i < len(ax.keys)-1; i++ { // the last stretch is padding
		a, b := ax.keys[i-1], ax.keys[i]
		if d := b.Sub(a); d >= 2*time.Hour {
			x1, x2 := ax.x(a), ax.x(b)
			if x2-x1 > 40 {
				c.Texts = append(c.Texts, svgText{X: (x1 + x2) / 2, Y: rowAxis - 5, Anchor: "middle", Class: "gap", Text: roughDuration(d)})
			}
		}
	}
	if !disabledAt.IsZero() {
		x := ax.x(disabledAt)
		c.Rects = append(c.Rects, svgRect{X: x, Y: rowSchedule - 12, W: chartWidth - chartRight - x, H: rowAxis - rowSchedule + 12,
			Class: "disabled-zone", Title: "disabled from " + formatAt(disabledAt, loc)})
	}
	if in.startLabel != "" {
		x := ax.x(in.start)
		c.Lines = append(c.Lines, svgLine{X1: x, Y1: 8, X2: x, Y2: rowAxis, Class: "now"})
		c.Texts = append(c.Texts, svgText{X: x + 3, Y: 10, Class: "now", Text: in.startLabel})
	}
	for _, t := range runs {
		x := ax.x(t)
		c.Marks = append(c.Marks, svgMark{Points: diamond(x, rowSchedule, 6), Class: "run",
			Title: "scheduled run " + formatAt(t, loc) + " (" + formatUTC(t) + ")"})
	}
	if !planned.IsZero() {
		x := ax.x(planned)
		c.Marks = append(c.Marks, svgMark{Points: diamond(x, rowBars+barHeight/2, 7), Class: "planned",
			Title: "next start planned " + formatAt(planned, loc) + " (" + formatUTC(planned) + ")"})
	}
	for _, b := range bars {
		x1, x2 := ax.x(b.start), ax.x(b.end)
		w := max(x2-x1, minBarWidth)
		title := fmt.Sprintf("attempt %d: started %s, %s %s", b.no, formatAt(b.start, loc), b.what, formatAt(b.end, loc))
		if b.class == "running" {
			title = fmt.Sprintf("attempt %d: started %s, deadline %s", b.no, formatAt(b.start, loc), formatAt(b.end, loc))
		}
		c.Rects = append(c.Rects, svgRect{X: x1, Y: rowBars, W: w, H: barHeight, Class: "bar " + b.class, Title: title})
		if w >= 22 {
			c.Texts = append(c.Texts, svgText{X: x1 + w/2, Y: rowBars + barHeight/2 + 4, Anchor: "middle", Class: "bar-label",
				Text: fmt.Sprintf("#%d", b.no), Title: title})
		}
	}
	// Decisions: a connector from the failure to the start it plans, and a
	// label on one of two lines, skipped where it would overlap.
	lastEnd := []float64{-1e9, -1e9}
	for _, d := range decisions {
		x := ax.x(d.at)
		if !d.plan.IsZero() {
			px := ax.x(d.plan)
			if px-x >= 6 {
				c.Lines = append(c.Lines, svgLine{X1: x, Y1: rowBars + barHeight + 4, X2: px, Y2: rowBars + barHeight + 4, Class: "link " + d.class})
			}
		}
		c.Lines = append(c.Lines, svgLine{X1: x, Y1: rowBars + barHeight, X2: x, Y2: rowDecision - 10, Class: "tick " + d.class})
		width := 6.2*float64(len(d.text)) + 8
		for line := range 2 {
			if x >= lastEnd[line] {
				c.Texts = append(c.Texts, svgText{X: x + 2, Y: rowDecision + float64(line)*decisionGap, Class: "decision " + d.class, Text: d.text, Title: d.title})
				lastEnd[line] = x + width
				break
			}
		}
	}
	for _, a := range actions {
		x := ax.x(a.at)
		c.Marks = append(c.Marks, svgMark{Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f", x-5, rowBars-9, x+5, rowBars-9, x, rowBars-2),
			Class: "action", Title: a.what + " at " + formatAt(a.at, loc)})
	}
	// Axis labels: times, thinned out; the date where the day changes.
	labels := []time.Time{begin}
	for _, b := range bars {
		labels = append(labels, b.start)
	}
	for _, d := range decisions {
		labels = append(labels, d.at)
	}
	labels = append(labels, runs...)
	if !planned.IsZero() {
		labels = append(labels, planned)
	}
	slices.SortFunc(labels, func(a, b time.Time) int { return a.Compare(b) })
	lastX, lastDay := -1e9, ""
	for _, t := range labels {
		x := ax.x(t)
		if x-lastX < labelGap {
			continue
		}
		lt := t.In(loc)
		c.Lines = append(c.Lines, svgLine{X1: x, Y1: rowAxis, X2: x, Y2: rowAxis + 4, Class: "axis"})
		c.Texts = append(c.Texts, svgText{X: x, Y: rowAxis + 17, Anchor: "middle", Class: "time", Text: lt.Format("15:04"),
			Title: formatAt(t, loc) + " (" + formatUTC(t) + ")"})
		if day := lt.Format("Mon 2 Jan"); day != lastDay {
			c.Texts = append(c.Texts, svgText{X: x, Y: rowAxis + 32, Anchor: "middle", Class: "date", Text: day})
			lastDay = day
		}
		lastX = x
	}
	return c
}

// axis maps times to x on a compressed scale through its keys.
type axis struct {
	keys []time.Time
	xs   []float64
}

// newAxis returns the axis through keys from x0 to x1: each stretch
// between two consecutive keys gets a width in proportion to
// log(1 + length/30s), and at least a sliver.
func newAxis(keys []time.Time, x0, x1 float64) axis {
	slices.SortFunc(keys, func(a, b time.Time) int { return a.Compare(b) })
	keys = slices.CompactFunc(keys, func(a, b time.Time) bool { return a.Equal(b) })
	weights := make([]float64, len(keys))
	total := 0.0
	for i := 1; i < len(keys); i++ {
		d := keys[i].Sub(keys[i-1])
		weights[i] = math.Log1p(d.Seconds()/30) + 0.05
		total += weights[i]
	}
	xs := make([]float64, len(keys))
	xs[0] = x0
	for i := 1; i < len(keys); i++ {
		xs[i] = xs[i-1] + (x1-x0)*weights[i]/total
	}
	return axis{keys: keys, xs: xs}
}

// x returns the position of t: on a key, its place; between two keys, in
// proportion within their stretch.
func (a axis) x(t time.Time) float64 {
	i, found := slices.BinarySearchFunc(a.keys, t, func(k, t time.Time) int { return k.Compare(t) })
	switch {
	case found:
		return a.xs[i]
	case i == 0:
		return a.xs[0]
	case i == len(a.keys):
		return a.xs[len(a.xs)-1]
	}
	k0, k1 := a.keys[i-1], a.keys[i]
	f := float64(t.Sub(k0)) / float64(k1.Sub(k0))
	return a.xs[i-1] + f*(a.xs[i]-a.xs[i-1])
}

// diamond returns the points of a diamond of radius r around (x, y).
func diamond(x, y, r float64) string {
	return fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", x, y-r, x+r, y, x, y+r, x-r, y)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
