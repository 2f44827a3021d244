package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// demoView prints one line per lifecycle event as it happens, and a
// summary at the end. Events after the end of the demo are left out.
//
// The loops publish from several goroutines, so events can arrive a little
// out of time order; the view holds them back for a short while (Flush)
// and prints them in time order.
type demoView struct {
	out io.Writer
	end time.Time

	mu      sync.Mutex
	closed  bool
	pending []refresh.Event
	started map[string]time.Time // by attempt uid
	models  map[string]*modelTally
	order   []string
	total   modelTally
	stale   int
	disable []refresh.Event

	// planned holds each model's next planned start, from its last event,
	// to measure how late its next start came (lateness).
	planned map[string]time.Time
	speed   float64
	late    lateness
}

// lateBound is how late, in virtual time, a start may come before the
// view says that the demo falls behind its clock: the view shows times to
// the minute, so a start two minutes late shows.
const lateBound = 2 * time.Minute

// lateness counts the starts that came more than lateBound after their
// planned time, and the latest of them.
type lateness struct {
	starts int
	worst  time.Duration
}

// modelTally counts the attempts of one model.
type modelTally struct {
	starts, successes, failures, timeouts, retries, disables int
}

func newDemoView(out io.Writer, end time.Time, speed float64) *demoView {
	return &demoView{out: out, end: end, speed: speed, started: map[string]time.Time{}, models: map[string]*modelTally{},
		planned: map[string]time.Time{}}
}

// header prints what the demo is about to do.
func (v *demoView) header(cfg demoConfig, story demoStory) {
	fmt.Fprintf(v.out, "freshen demo: %s of virtual time from %s, %s faster than real time (about %s).\n",
		duration(cfg.Duration), clockTime(cfg.Start), strings.TrimSuffix(fmt.Sprintf("%.0fx", cfg.Speed), ".0"),
		duration(time.Duration(float64(cfg.Duration)/cfg.Speed).Round(time.Second)))
	fmt.Fprintf(v.out, "Workers fail %.0f%% of attempts. The tables' upstream is down %s to %s.\n",
		cfg.FailRate*100, clockTime(story.outageFrom), story.outageTo.In(demoZone).Format("15:04"))
	fmt.Fprintf(v.out, "Every day at %s the person on call enables the disabled models.\n\n", story.enableAt.In(demoZone).Format("15:04"))
}

// printf prints a line of its own between the events.
func (v *demoView) printf(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(v.out, format, args...)
}

// add takes events to show; it is safe for concurrent use.
func (v *demoView) add(events []refresh.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	for _, e := range events {
		if !e.At.After(v.end) {
			v.pending = append(v.pending, e)
		}
	}
}

// flush prints, in time order, the events held back that happened at or
// before upTo.
func (v *demoView) flush(upTo time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	sort.SliceStable(v.pending, func(i, j int) bool { return v.pending[i].At.Before(v.pending[j].At) })
	n := sort.Search(len(v.pending), func(i int) bool { return v.pending[i].At.After(upTo) })
	for _, e := range v.pending[:n] {
		v.count(e)
		for _, line := range v.lines(e) {
			fmt.Fprintf(v.out, "%s  %-12s %-10s %s\n", clockTime(e.At), e.ModelID, line[0], line[1])
		}
		v.measure(e)
	}
	v.pending = append(v.pending[:0], v.pending[n:]...)
}

// close prints the events held back and stops taking more.
func (v *demoView) close() {
	v.flush(v.end)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
}

func (v *demoView) count(e refresh.Event) {
	t, ok := v.models[e.ModelID]
	if !ok {
		t = &modelTally{}
		v.models[e.ModelID] = t
		v.order = append(v.order, e.ModelID)
	}
	for _, t := range []*modelTally{t, &v.total} {
		switch e.Type {
		case refresh.EventStart:
			t.starts++
		case refresh.EventSuccess:
			t.successes++
		case refresh.EventTimeout:
			t.timeouts++
		}
		if e.Type == refresh.EventFailure || e.Type == refresh.EventTimeout {
			t.failures++
			if e.Decision == refresh.DecisionDisable {
				t.disables++
			} else {
				t.retries++
			}
		}
	}
	switch e.Type {
	case refresh.EventStale:
		v.stale++
	case refresh.EventFailure, refresh.EventTimeout:
		if e.Decision == refresh.DecisionDisable {
			v.disable = append(v.disable, e)
		}
	}
}

// measure notes the planned start that e leaves, or how late a start came
// after it; the first start later than lateBound prints a warning.
func (v *demoView) measure(e refresh.Event) {
	switch e.Type {
	case refresh.EventStart:
		planned, ok := v.planned[e.ModelID]
		delete(v.planned, e.ModelID)
		late := e.At.Sub(planned)
		if !ok || late <= lateBound {
			return
		}
		v.late.starts++
		if v.late.worst < late {
			v.late.worst = late
		}
		if v.late.starts == 1 {
			fmt.Fprintf(v.out, "(the demo falls behind its clock: this start came %s after its planned %s; this host\n"+
				" cannot keep up with --speed %g: try --speed %g)\n", duration(late), clockTime(planned), v.speed, v.slower())
		}
	case refresh.EventStale, refresh.EventStatus:
	default:
		if e.RefreshAt.IsZero() {
			delete(v.planned, e.ModelID)
		} else {
			v.planned[e.ModelID] = e.RefreshAt
		}
	}
}

// slower returns a speed at which the latest start seen would have come
// within lateBound, rounded down to two significant digits.
func (v *demoView) slower() float64 {
	s := v.speed * float64(lateBound) / float64(v.late.worst)
	for p := 1.0; ; p *= 10 {
		if s < 100*p {
			return math.Max(1, math.Floor(s/p)*p)
		}
	}
}

// lines returns the (event, detail) lines of e.
func (v *demoView) lines(e refresh.Event) [][2]string {
	switch e.Type {
	case refresh.EventCreate:
		if e.RefreshAt.IsZero() {
			return [][2]string{{"created", "on demand: runs when triggered"}}
		}
		return [][2]string{{"created", "first run " + clockTime(e.RefreshAt)}}
	case refresh.EventStart:
		v.started[e.AttemptUID] = e.At
		return [][2]string{{"start", fmt.Sprintf("attempt %d", e.AttemptNo)}}
	case refresh.EventSuccess:
		return [][2]string{{"success", v.took(e) + " → " + nextRun(e.RefreshAt)}}
	case refresh.EventFailure, refresh.EventTimeout:
		what := e.Kind + ": " + e.Message + " " + v.took(e)
		if e.Type == refresh.EventTimeout {
			what = "no outcome by the deadline"
		}
		lines := [][2]string{{e.Type, what + " → " + plan(e)}}
		if e.Decision == refresh.DecisionDisable {
			lines = append(lines, [2]string{"", "DISABLED: " + e.Reason})
		}
		return lines
	case refresh.EventStale:
		return [][2]string{{"stale", "stale outcome ignored (" + e.Kind + nonEmpty(e.Kind, ": ") + e.Message + ")"}}
	case refresh.EventTrigger:
		why := "edited → refresh now"
		if e.AttemptUID != "" {
			why = "edited → running attempt superseded, refresh now"
		}
		return [][2]string{{"trigger", why}}
	case refresh.EventEnable:
		return [][2]string{{"enable", "by the person on call → " + nextRun(e.RefreshAt)}}
	case refresh.EventStatus:
		return nil
	}
	return [][2]string{{e.Type, nextRun(e.RefreshAt)}}
}

// took returns "after 7m12s" for the end of an attempt whose start was
// shown, else "".
func (v *demoView) took(e refresh.Event) string {
	at, ok := v.started[e.AttemptUID]
	if !ok {
		return ""
	}
	delete(v.started, e.AttemptUID)
	return "after " + duration(e.At.Sub(at))
}

// plan says what a failure decided.
func plan(e refresh.Event) string {
	switch e.Decision {
	case refresh.DecisionRetry:
		if e.Delay == 0 {
			return "retry now"
		}
		return "retry in " + duration(e.Delay)
	case refresh.DecisionRetryAligned:
		return "retry at the next run, " + clockTime(e.RefreshAt)
	case refresh.DecisionWaitNext:
		return "retries exhausted, new round at " + clockTime(e.RefreshAt)
	case refresh.DecisionDisable:
		return "disabled"
	}
	return e.Decision
}

func nextRun(t time.Time) string {
	if t.IsZero() {
		return "nothing planned"
	}
	return "next run " + clockTime(t)
}

func nonEmpty(s, sep string) string {
	if s == "" {
		return ""
	}
	return sep
}

// summary prints the totals, the models that were disabled on the way and
// those still disabled at the end.
func (v *demoView) summary(virtual, real time.Duration, disabled []refresh.Model) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w := v.out
	fmt.Fprintf(w, "\nSummary: %s of virtual time in %s.\n", duration(virtual.Round(time.Minute)), real.Round(100*time.Millisecond))
	t := v.total
	fmt.Fprintf(w, "  %s, %s, %s (%s), %s, %s, %s\n\n",
		count(t.starts, "start"), count(t.successes, "success"), count(t.failures, "failure"), count(t.timeouts, "timeout"),
		count(t.retries, "retry"), count(t.disables, "disable"), count(v.stale, "stale outcome"))
	if v.late.starts > 0 {
		fmt.Fprintf(w, "  The demo fell behind its clock: %s came more than %s late (at most %s);\n"+
			"  this host cannot keep up with --speed %g: try --speed %g.\n\n", count(v.late.starts, "start"), duration(lateBound),
			duration(v.late.worst), v.speed, v.slower())
	}
	ids := append([]string(nil), v.order...)
	sort.Strings(ids)
	fmt.Fprintf(w, "  %-12s %7s %10s %9s %8s %9s\n", "model", "starts", "successes", "failures", "retries", "disables")
	for _, id := range ids {
		m := v.models[id]
		fmt.Fprintf(w, "  %-12s %7d %10d %9d %8d %9d\n", id, m.starts, m.successes, m.failures, m.retries, m.disables)
	}
	if len(v.disable) > 0 {
		fmt.Fprintln(w, "\n  Disabled on the way:")
		for _, e := range v.disable {
			fmt.Fprintf(w, "    %s  %-12s %s\n", clockTime(e.At), e.ModelID, e.Reason)
		}
	}
	if len(disabled) == 0 {
		fmt.Fprintln(w, "\n  No model is disabled at the end.")
		return
	}
	fmt.Fprintln(w, "\n  Still disabled at the end:")
	for _, m := range disabled {
		fmt.Fprintf(w, "    %-12s %s (since %s)\n", m.ID, m.DisabledReason, clockTime(m.DisabledAt))
	}
}

// count shows "1 start", "2 starts", "3 successes", "2 retries".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	switch {
	case strings.HasSuffix(noun, "ss"):
		noun += "es"
	case strings.HasSuffix(noun, "y"):
		noun = strings.TrimSuffix(noun, "y") + "ies"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// clockTime shows t as "Mon 06:00 Paris".
func clockTime(t time.Time) string { return t.In(demoZone).Format("Mon 15:04") + " Paris" }

// duration shows d compactly, to the second: "1m", "7m12s", "48h".
func duration(d time.Duration) string { return refresh.Duration(d.Round(time.Second)).String() }
