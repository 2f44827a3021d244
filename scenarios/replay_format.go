package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// CoverageNote says in a sentence which period a replay covers and why it
// is shorter than the one asked for, if it is.
func (r Replayed) CoverageNote() string {
	s := fmt.Sprintf("period covered: %s to %s", utc(r.From), utc(r.Until))
	switch r.CoveredBy {
	case CoveredCreation:
		s += fmt.Sprintf(" (asked from %s; the model was created at %s)", utc(r.Since), utc(r.From))
	case CoveredHistory:
		s += fmt.Sprintf(" (asked from %s; only the newest attempts were read, the oldest started at %s)", utc(r.Since), utc(r.From))
	}
	return s
}

// tallyJSON is the JSON of a Tally.
type tallyJSON struct {
	Attempts int      `json:"attempts"`
	Retries  int      `json:"retries"`
	Disabled []string `json:"disabled"`
}

func tallyOut(t Tally) tallyJSON {
	out := tallyJSON{Attempts: t.Attempts, Retries: t.Retries, Disabled: []string{}}
	for _, d := range t.Disabled {
		out.Disabled = append(out.Disabled, utc(d))
	}
	return out
}

// WriteReplayJSON writes a replay as one JSON object: the model, the
// period covered (from, until; since is the start asked for, covered_by
// why from is later: period, creation or history), the summary, and the
// recorded and replayed timelines as arrays of section 5's entries, one a
// line.
func WriteReplayJSON(w io.Writer, r Replayed) error {
	head, err := json.Marshal(struct {
		Model     string `json:"model"`
		From      string `json:"from"`
		Until     string `json:"until"`
		Since     string `json:"since"`
		CoveredBy string `json:"covered_by"`
		Summary   struct {
			Recorded tallyJSON `json:"recorded"`
			Replayed tallyJSON `json:"replayed"`
		} `json:"summary"`
	}{Model: r.ModelID, From: utc(r.From), Until: utc(r.Until), Since: utc(r.Since), CoveredBy: r.CoveredBy,
		Summary: struct {
			Recorded tallyJSON `json:"recorded"`
			Replayed tallyJSON `json:"replayed"`
		}{tallyOut(r.RecordedTally), tallyOut(r.ReplayTally)}})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1]) // without its closing brace
	for _, part := range []struct {
		name     string
		timeline []Entry
	}{{"recorded", r.Recorded}, {"replayed", r.Replay}} {
		fmt.Fprintf(&b, ",\n%q: ", part.name)
		if err := WriteJSON(&b, part.timeline); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // WriteJSON's last newline
	}
	b.WriteString("}\n")
	_, err = w.Write(b.Bytes())
	return err
}

// WriteReplayTable writes a replay for a person: the period covered, the
// recorded and replayed timelines side by side (one row per instant and
// event; the entries of one instant paired in order), then the summary.
func WriteReplayTable(w io.Writer, r Replayed) error {
	fmt.Fprintf(w, "model %s: %s\n\n", r.ModelID, r.CoverageNote())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT (UTC)\tRECORDED\tREPLAYED")
	i, j := 0, 0
	for i < len(r.Recorded) || j < len(r.Replay) {
		var at time.Time
		switch {
		case j == len(r.Replay) || i < len(r.Recorded) && r.Recorded[i].At.Before(r.Replay[j].At):
			at = r.Recorded[i].At
		default:
			at = r.Replay[j].At
		}
		left, right := "", ""
		if i < len(r.Recorded) && r.Recorded[i].At.Equal(at) {
			left = replayCell(r.Recorded[i])
			i++
		}
		if j < len(r.Replay) && r.Replay[j].At.Equal(at) {
			right = replayCell(r.Replay[j])
			j++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", short(at), dash(left), dash(right))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rec, rep := r.RecordedTally, r.ReplayTally
	fmt.Fprintln(tw, "SUMMARY\tRECORDED\tREPLAYED")
	fmt.Fprintf(tw, "attempts\t%d\t%d\n", rec.Attempts, rep.Attempts)
	fmt.Fprintf(tw, "retries\t%d\t%d\n", rec.Retries, rep.Retries)
	fmt.Fprintf(tw, "disabled\t%s\t%s\n", disabledList(rec.Disabled), disabledList(rep.Disabled))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, side := range []struct {
		name     string
		timeline []Entry
	}{{"recorded", r.Recorded}, {"replayed", r.Replay}} {
		if reason := lastReason(side.timeline); reason != "" {
			fmt.Fprintf(w, "%s disabled reason: %s\n", side.name, reason)
		}
	}
	return nil
}

// short writes t for a table, "-" if zero.
func short(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// replayCell writes an entry in a few words: "start #2", "failure
// http_503 → retry at 2026-03-02 07:05:00", "failure → disable".
func replayCell(e Entry) string {
	switch e.Event {
	case refresh.EventStart:
		return fmt.Sprintf("start #%d", e.AttemptNo)
	case refresh.EventFailure, refresh.EventTimeout:
		s := e.Event
		if e.Event == refresh.EventFailure && e.Kind != "" {
			s += " " + e.Kind
		}
		s += " → " + e.Decision
		switch e.Decision {
		case refresh.DecisionRetry, refresh.DecisionRetryAligned, refresh.DecisionWaitNext:
			if !e.RefreshAt.IsZero() {
				s += " at " + short(e.RefreshAt)
			}
		}
		return s
	}
	return e.Event
}

// disabledList writes the times a model was disabled, "no" for none.
func disabledList(ts []time.Time) string {
	if len(ts) == 0 {
		return "no"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = short(t)
	}
	return strings.Join(s, ", ")
}

// WriteReplayMermaid writes a gantt chart of a replay: a section of the
// recorded attempts and one of the replayed ones on the same time axis,
// each attempt a bar from its start to its end, and each disabling a
// milestone.
func WriteReplayMermaid(w io.Writer, r Replayed) error {
	var b strings.Builder
	const layout = "2006-01-02 15:04:05"
	at := func(t time.Time) string { return t.UTC().Format(layout) }
	label := func(s string) string { return strings.NewReplacer(":", " ", ";", " ", "#", " ").Replace(s) }
	fmt.Fprintf(&b, "gantt\n    title %s recorded and replayed (times in UTC)\n    dateFormat YYYY-MM-DD HH:mm:ss\n    axisFormat %%m-%%d %%H:%%M\n", label(r.ModelID))
	for _, part := range []struct {
		name, tag string
		timeline  []Entry
	}{{"recorded", "r", r.Recorded}, {"replayed", "p", r.Replay}} {
		fmt.Fprintf(&b, "    section %s\n", part.name)
		var open *Entry
		n := 0
		end := func(e Entry, tag, what string) {
			if open == nil {
				return
			}
			fmt.Fprintf(&b, "    attempt %d%s :%s%s%d, %s, %s\n", open.AttemptNo, what, tag, part.tag, n, at(open.At), at(e.At))
			open = nil
		}
		for i := range part.timeline {
			e := part.timeline[i]
			switch e.Event {
			case refresh.EventStart:
				n++
				open = &part.timeline[i]
			case refresh.EventSuccess:
				end(e, "done, ", "")
			case refresh.EventFailure, refresh.EventTimeout:
				what := " " + e.Event
				if e.Kind != "" && e.Event == refresh.EventFailure {
					what += " " + e.Kind
				}
				end(e, "crit, ", label(what))
				if e.Decision == refresh.DecisionDisable {
					fmt.Fprintf(&b, "    disabled :crit, milestone, %s, 0m\n", at(e.At))
				}
			case refresh.EventTrigger, refresh.EventCancel:
				end(e, "active, ", " superseded")
				fmt.Fprintf(&b, "    %s :milestone, %s, 0m\n", e.Event, at(e.At))
			}
		}
		if open != nil {
			fmt.Fprintf(&b, "    attempt %d running :active, %s%d, %s, %s\n", open.AttemptNo, part.tag, n, at(open.At), at(open.DeadlineAt))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lastReason returns the reason of the last disabling of timeline, if
// known.
func lastReason(timeline []Entry) string {
	for i := len(timeline) - 1; i >= 0; i-- {
		if timeline[i].Decision == refresh.DecisionDisable {
			return timeline[i].Reason
		}
	}
	return ""
}
