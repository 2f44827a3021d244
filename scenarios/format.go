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

// entryJSON is the JSON shape of docs/simulate.md; field order matters.
type entryJSON struct {
	At         string  `json:"at"`
	Event      string  `json:"event"`
	Kind       string  `json:"kind,omitempty"`
	Decision   string  `json:"decision,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	AttemptNo  int     `json:"attempt_no"`
	RefreshAt  *string `json:"refresh_at"`
	DeadlineAt *string `json:"deadline_at"`
	Disabled   bool    `json:"disabled"`

	Cause          string  `json:"cause,omitempty"`
	Upstream       string  `json:"upstream,omitempty"`
	Unchanged      bool    `json:"unchanged,omitempty"`
	Until          *string `json:"until,omitempty"`
	OverdueSince   *string `json:"overdue_since,omitempty"`
	OverdueFor     string  `json:"overdue_for,omitempty"`
	State          string  `json:"state,omitempty"`
	Missed         int     `json:"missed,omitempty"`
	DebounceAt     *string `json:"debounce_at,omitempty"`
	WaitingForSlot bool    `json:"waiting_for_slot,omitempty"`
}

func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// overdueFor is the length of the freshness episode a freshness_restored
// ends, as a duration ("16m10s"; "0s" for an episode that ended at once),
// and "" for other entries.
func overdueFor(e Entry) string {
	if e.Event != "freshness_restored" {
		return ""
	}
	return e.OverdueFor.String()
}

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
		line, err := json.Marshal(entryJSON{
			At: utc(e.At), Event: e.Event, Kind: e.Kind, Decision: e.Decision, Reason: e.Reason,
			AttemptNo: e.AttemptNo, RefreshAt: nullable(e.RefreshAt), DeadlineAt: nullable(e.DeadlineAt), Disabled: e.Disabled,
			Cause: e.Cause, Upstream: e.Upstream, Unchanged: e.Unchanged, Until: nullable(e.Until),
			OverdueSince: nullable(e.OverdueSince), OverdueFor: overdueFor(e), State: e.State, Missed: e.Missed,
			DebounceAt: nullable(e.DebounceAt), WaitingForSlot: e.WaitingForSlot,
		})
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
func WriteTable(w io.Writer, timeline []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT (UTC)\tEVENT\tATTEMPT\tKIND\tDECISION\tREFRESH_AT\tDEADLINE_AT\tDISABLED")
	short := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	for _, e := range timeline {
		disabled := "no"
		if e.Disabled {
			disabled = "yes"
		}
		if e.Reason != "" {
			disabled += ": " + e.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", short(e.At), e.Event, e.AttemptNo,
			dash(e.Kind), dash(e.Decision), short(e.RefreshAt), short(e.DeadlineAt), disabled)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteMermaid writes a gantt chart of the timeline: each attempt is a bar
// from its start to its end, failures, timeouts, the disabling and
// successes are milestones, and user actions are marked where they happen.
func WriteMermaid(w io.Writer, id string, timeline []Entry) error {
	var b strings.Builder
	const layout = "2006-01-02 15:04:05"
	at := func(t time.Time) string { return t.UTC().Format(layout) }
	label := func(s string) string { return strings.NewReplacer(":", " ", ";", " ", "#", " ").Replace(s) }
	fmt.Fprintf(&b, "gantt\n    title %s (times in UTC)\n    dateFormat YYYY-MM-DD HH:mm:ss\n    axisFormat %%m-%%d %%H:%%M\n", label(id))
	var open *Entry // the running attempt's start
	n := 0
	section := ""
	sectionOf := func(t time.Time) {
		if s := t.UTC().Format("2006-01-02"); s != section {
			section = s
			fmt.Fprintf(&b, "    section %s\n", s)
		}
	}
	end := func(e Entry, tag, what string) {
		if open == nil {
			return
		}
		fmt.Fprintf(&b, "    attempt %d %s :%sa%d, %s, %s\n", open.AttemptNo, what, tag, n, at(open.At), at(e.At))
		open = nil
	}
	for i := range timeline {
		e := timeline[i]
		sectionOf(e.At)
		switch e.Event {
		case "start":
			n++
			open = &timeline[i]
		case "success":
			end(e, "done, ", "")
			fmt.Fprintf(&b, "    success :milestone, %s, 0m\n", at(e.At))
		case "failure", "timeout":
			end(e, "crit, ", "")
			what := e.Event
			if e.Kind != "" && e.Event == "failure" {
				what += " " + e.Kind
			}
			fmt.Fprintf(&b, "    %s → %s :crit, milestone, %s, 0m\n", label(what), e.Decision, at(e.At))
			if e.Decision == "disable" {
				fmt.Fprintf(&b, "    disabled - %s :crit, milestone, %s, 0m\n", label(e.Reason), at(e.At))
			}
		case "trigger", "cancel":
			end(e, "active, ", "superseded")
			fmt.Fprintf(&b, "    %s :milestone, %s, 0m\n", e.Event, at(e.At))
		case "create", "enable", "pause", "resume":
			fmt.Fprintf(&b, "    %s :milestone, %s, 0m\n", e.Event, at(e.At))
		}
	}
	if open != nil {
		fmt.Fprintf(&b, "    attempt %d running :active, a%d, %s, %s\n", open.AttemptNo, n, at(open.At), at(open.DeadlineAt))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
