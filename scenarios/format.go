package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// entryJSON is the JSON shape of docs/simulate.md, with the fields of
// section 6 where they apply (absent otherwise); field order matters.
type entryJSON struct {
	At       string `json:"at"`
	Model    string `json:"model,omitempty"`
	Event    string `json:"event"`
	Kind     string `json:"kind,omitempty"`
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	// Unchanged marks an unchanged success.
	Unchanged    bool    `json:"unchanged,omitempty"`
	Until        *string `json:"until,omitempty"`
	Missed       int     `json:"missed,omitempty"`
	State        string  `json:"state,omitempty"`
	OverdueSince *string `json:"overdue_since,omitempty"`
	// OverdueFor is the episode's length as a Go duration ("1h30m0s").
	OverdueFor     string  `json:"overdue_for,omitempty"`
	AttemptNo      int     `json:"attempt_no"`
	RefreshAt      *string `json:"refresh_at"`
	DeadlineAt     *string `json:"deadline_at"`
	DebounceAt     *string `json:"debounce_at,omitempty"`
	WaitingForSlot bool    `json:"waiting_for_slot,omitempty"`
	WaitingUntil   *string `json:"waiting_until,omitempty"`
	Disabled       bool    `json:"disabled"`
}

func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func nullable(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := utc(t)
	return &s
}

// WriteJSON writes the timeline as one JSON array, an entry per line.
func WriteJSON(w io.Writer, timeline []Entry) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, e := range timeline {
		j := entryJSON{
			At: utc(e.At), Model: e.Model, Event: e.Event, Kind: e.Kind, Decision: e.Decision, Reason: e.Reason,
			Cause: e.Cause, Upstream: e.Upstream, Unchanged: e.Unchanged, Until: nullable(e.Until), Missed: e.Missed,
			State: e.State, OverdueSince: nullable(e.OverdueSince),
			AttemptNo: e.AttemptNo, RefreshAt: nullable(e.RefreshAt), DeadlineAt: nullable(e.DeadlineAt),
			DebounceAt: nullable(e.DebounceAt), WaitingForSlot: e.WaitingForSlot, WaitingUntil: nullable(e.WaitingUntil),
			Disabled: e.Disabled,
		}
		if e.OverdueFor > 0 {
			j.OverdueFor = e.OverdueFor.String()
		}
		line, err := json.Marshal(j)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// WriteTable writes the timeline for a person: one aligned row per entry.
// A MODEL column comes first when the entries carry their model, and a
// DETAIL column last when an entry has details of docs/policy.md
// (snooze, skip, debounce, wait for a slot, freshness, upstreams).
func WriteTable(w io.Writer, timeline []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	models, details := false, false
	for _, e := range timeline {
		models = models || e.Model != ""
		details = details || detail(e) != ""
	}
	head := "AT (UTC)\tEVENT\tATTEMPT\tKIND\tDECISION\tREFRESH_AT\tDEADLINE_AT\tDISABLED"
	if models {
		head = "AT (UTC)\tMODEL\t" + strings.TrimPrefix(head, "AT (UTC)\t")
	}
	if details {
		head += "\tDETAIL"
	}
	fmt.Fprintln(tw, head)
	for _, e := range timeline {
		disabled := "no"
		if e.Disabled {
			disabled = "yes"
		}
		if e.Reason != "" && e.Decision == "disable" {
			disabled += ": " + e.Reason
		}
		row := short(e.At)
		if models {
			row += "\t" + e.Model
		}
		row += fmt.Sprintf("\t%s\t%d\t%s\t%s\t%s\t%s\t%s", e.Event, e.AttemptNo,
			dash(e.Kind), dash(e.Decision), short(e.RefreshAt), short(e.DeadlineAt), disabled)
		if details {
			row += "\t" + dash(detail(e))
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// detail says, for a person, what an entry brings of docs/policy.md:
// e.g. "snoozed until 2026-03-02 07:00:00", "skipped 3 missed occurrences",
// "waits for a slot of queue \"exports\" (max_running 1)", "waits for
// rate_key \"api.example.com\" (max_starts 2 per 1m) until 2026-03-02
// 06:01:00".
func detail(e Entry) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch e.Event {
	case "snooze":
		if !e.Until.IsZero() {
			add("asked for %s", short(e.Until))
		}
	case "skip":
		add("%d missed occurrence(s) skipped", e.Missed)
	case "wait":
		if e.WaitingUntil.IsZero() {
			add("waits for a slot of %s", e.Reason)
		} else {
			add("waits for %s until %s", e.Reason, short(e.WaitingUntil))
		}
	case "wait_too_long":
		add("has waited longer than max_lateness for %s", e.Reason)
	case "freshness_lost":
		add("overdue since %s, %s", short(e.OverdueSince), e.State)
	case "freshness_restored":
		add("overdue for %s since %s", e.OverdueFor, short(e.OverdueSince))
	case EventUpstream:
		add("%s changed; %s", e.Upstream, e.Reason)
	}
	if e.Unchanged {
		add("data unchanged")
	}
	if e.Cause != "" {
		what := "cause " + e.Cause
		if e.Upstream != "" {
			what += " " + e.Upstream
		}
		add("%s", what)
	}
	if e.Event == "trigger" && e.Reason != "" {
		add("%s", e.Reason)
	}
	if !e.DebounceAt.IsZero() {
		add("debounce_at %s", short(e.DebounceAt))
	}
	if e.WaitingForSlot && e.Event != "wait" {
		if e.WaitingUntil.IsZero() {
			add("waiting for a slot")
		} else {
			add("waiting until %s", short(e.WaitingUntil))
		}
	}
	return strings.Join(parts, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteMermaid writes a gantt chart of the timeline: each attempt is a bar
// from its start to its end, failures, timeouts, the disabling, successes
// and snoozes are milestones, and user actions, upstream triggers, skips,
// waits for a slot or a start, debounces and the freshness episodes are marked where
// they happen. With one model a section starts each day; when the entries
// carry their model, each model has its section, in the order they first
// appear.
func WriteMermaid(w io.Writer, id string, timeline []Entry) error {
	var b strings.Builder
	fmt.Fprintf(&b, "gantt\n    title %s (times in UTC)\n    dateFormat YYYY-MM-DD HH:mm:ss\n    axisFormat %%m-%%d %%H:%%M\n", mermaidLabel(id))
	g := gantt{b: &b}
	var order []string
	byModel := map[string][]Entry{}
	for _, e := range timeline {
		if _, ok := byModel[e.Model]; !ok {
			order = append(order, e.Model)
		}
		byModel[e.Model] = append(byModel[e.Model], e)
	}
	for _, m := range order {
		g.section = ""
		if m != "" {
			fmt.Fprintf(&b, "    section %s\n", mermaidLabel(m))
		}
		g.write(byModel[m], m == "")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mermaidLabel(s string) string {
	return strings.NewReplacer(":", " ", ";", " ", "#", " ").Replace(s)
}

// gantt writes the bars and milestones of one model's entries.
type gantt struct {
	b       *strings.Builder
	n       int // bars so far, for their ids
	section string
}

func (g *gantt) write(timeline []Entry, daySections bool) {
	b := g.b
	const layout = "2006-01-02 15:04:05"
	at := func(t time.Time) string { return t.UTC().Format(layout) }
	label := mermaidLabel
	var open *Entry // the running attempt's start
	end := func(e Entry, tag, what string) {
		if open == nil {
			return
		}
		fmt.Fprintf(b, "    attempt %d %s :%sa%d, %s, %s\n", open.AttemptNo, what, tag, g.n, at(open.At), at(e.At))
		open = nil
	}
	mark := func(what string, t time.Time) { fmt.Fprintf(b, "    %s :milestone, %s, 0m\n", label(what), at(t)) }
	for i := range timeline {
		e := timeline[i]
		if daySections {
			if s := e.At.UTC().Format("2006-01-02"); s != g.section {
				g.section = s
				fmt.Fprintf(b, "    section %s\n", s)
			}
		}
		switch e.Event {
		case "start":
			g.n++
			open = &timeline[i]
		case "success":
			end(e, "done, ", "")
			if e.Unchanged {
				mark("success (unchanged)", e.At)
			} else {
				fmt.Fprintf(b, "    success :milestone, %s, 0m\n", at(e.At))
			}
		case "snooze":
			end(e, "", "snoozed")
			mark("snooze → "+short(e.RefreshAt), e.At)
		case "failure", "timeout":
			end(e, "crit, ", "")
			what := e.Event
			if e.Kind != "" && e.Event == "failure" {
				what += " " + e.Kind
			}
			fmt.Fprintf(b, "    %s → %s :crit, milestone, %s, 0m\n", label(what), e.Decision, at(e.At))
			if e.Decision == "disable" {
				fmt.Fprintf(b, "    disabled - %s :crit, milestone, %s, 0m\n", label(e.Reason), at(e.At))
			}
		case "trigger", "cancel", "debounce":
			if e.Event != "trigger" || e.DebounceAt.IsZero() {
				end(e, "active, ", "superseded")
			}
			what := e.Event
			if e.Upstream != "" {
				what += " by " + e.Upstream
			}
			if !e.DebounceAt.IsZero() {
				what += " (debounced)"
			}
			mark(what, e.At)
		case "skip":
			mark(fmt.Sprintf("skip (%d missed)", e.Missed), e.At)
		case "wait_too_long":
			mark("waited longer than max_lateness", e.At)
		case "wait":
			if e.WaitingUntil.IsZero() {
				mark("wait for a slot", e.At)
			} else {
				mark("wait for a start until "+short(e.WaitingUntil), e.At)
			}
		case "freshness_lost":
			fmt.Fprintf(b, "    freshness lost (%s) :crit, milestone, %s, 0m\n", label(e.State), at(e.At))
		case "freshness_restored":
			mark("freshness restored after "+e.OverdueFor.String(), e.At)
		case EventUpstream:
			mark("waits - "+e.Reason, e.At)
		case "create", "enable", "pause", "resume":
			fmt.Fprintf(b, "    %s :milestone, %s, 0m\n", e.Event, at(e.At))
		}
	}
	if open != nil {
		fmt.Fprintf(b, "    attempt %d running :active, a%d, %s, %s\n", open.AttemptNo, g.n, at(open.At), at(open.DeadlineAt))
	}
}
