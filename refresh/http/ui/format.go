package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// pageNames are the pages; each is templates/<name>.html with the layout
// and the shared parts.
var pageNames = []string{"error", "login", "overview", "models", "model", "preview", "dead", "replay", "limits"}

// parsePages parses every page, its links under base.
func parsePages(base string) map[string]*template.Template {
	funcs := template.FuncMap{
		"modelURL":     func(id string) string { return base + "/models/" + url.PathEscape(id) },
		"zoneOf":       zoneOf,
		"at":           formatAt,
		"atShort":      formatShort,
		"utc":          formatUTC,
		"ago":          relative,
		"dur":          formatAnyDuration,
		"retrySummary": retrySummary,
		"took":         took,
		"outcomeClass": outcomeClass,
		"stateOf":      stateOf,
		"short":        shorten,
		"json":         indentJSON,
		"plural":       plural,
		"add":          func(a, b int) int { return a + b },
		"event":        eventLabel,
		"eventCls":     eventClass,
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return pages
}

var zones sync.Map // name -> *time.Location

// zoneOf returns the zone of m's policy (UTC when it names none).
func zoneOf(m refresh.Model) *time.Location { return loadZone(m.Policy.Timezone) }

// loadZone returns the zone named name, UTC for "" or a name that no
// longer loads (policies are checked when written).
func loadZone(name string) *time.Location {
	if name == "" || name == "UTC" {
		return time.UTC
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	zones.Store(name, loc)
	return loc
}

// formatAt writes t in loc for a person: "Mon 2 Mar 2026, 16:00 CET";
// seconds only when t has some. The zero time is "—".
func formatAt(t time.Time, loc *time.Location) string {
	return formatIn(t, loc, "Mon 2 Jan 2006, 15:04", " MST")
}

// formatShort writes t in loc without the year: "Mon 2 Mar 16:00".
func formatShort(t time.Time, loc *time.Location) string {
	return formatIn(t, loc, "Mon 2 Jan 15:04", "")
}

// formatIn writes t in loc by layout, then the seconds when t has some,
// then tail (the rest of the layout). The zero time is "—".
func formatIn(t time.Time, loc *time.Location, layout, tail string) string {
	if t.IsZero() {
		return "—"
	}
	t = t.In(loc)
	if t.Second() != 0 {
		layout += ":05"
	}
	return t.Format(layout + tail)
}

// formatUTC writes t in UTC, RFC 3339 to the second, as the API does.
func formatUTC(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(time.RFC3339)
}

// relative writes t relative to now: "in 5 min", "3 h ago", "now".
func relative(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	if d > -time.Second && d < time.Second {
		return "now"
	}
	if d > 0 {
		return "in " + roughDuration(d)
	}
	return roughDuration(-d) + " ago"
}

// roughDuration writes d in its largest unit: "45 s", "5 min", "3 h",
// "2 d".
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		h := d.Hours()
		if h < 10 && math.Mod(h, 1) >= 0.25 {
			return fmt.Sprintf("%.1f h", h)
		}
		return fmt.Sprintf("%d h", int(h))
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
}

// formatDuration writes d as the policies do, shortest first: "0s",
// "90s" as "1m30s", "1h", "7d" for whole days.
func formatDuration(d time.Duration) string {
	if d != 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if s == "" {
		return "0s"
	}
	return s
}

// state is a model's state as the pages show it: one word, a colour
// class and a sentence.
type state struct {
	Name  string
	Class string
	Why   string
}

// stateOf returns the state of m that matters most, by the precedence of
// the API's state (refresh.Model.Phase): disabled, paused, running,
// snoozed, failing (a retry planned), waiting for a slot or a rate limit,
// scheduled, on demand.
func stateOf(m refresh.Model) state {
	switch m.Phase() {
	case refresh.PhaseDisabled:
		return state{"disabled", "disabled", "A final failure disabled it; nothing runs until it is enabled or triggered."}
	case refresh.PhasePaused:
		return state{"paused", "paused", "No new attempt starts until it is resumed."}
	case refresh.PhaseRunning:
		return state{"running", "running", fmt.Sprintf("Attempt %d is running.", m.AttemptNo)}
	case refresh.PhaseSnoozed:
		return state{"snoozed", "paused", "The worker said its input is not ready yet; it tries again later. Not a failure."}
	case refresh.PhaseRetrying:
		return state{"failing", "failing", fmt.Sprintf("%s in a row; the next attempt is planned.", plural(m.ConsecutiveFailures, "failure"))}
	case refresh.PhaseWaitingForSlot:
		if kind, key, ok := strings.Cut(m.WaitingLimit, ":"); ok && !m.WaitingUntil.IsZero() {
			return state{"waiting for a rate limit", "running", fmt.Sprintf("It is due, but the rate limit of the %s %q admits no start yet; it starts as soon as the limit admits it, with the other models waiting for it in turn.", kind, key)}
		}
		if kind, key, ok := strings.Cut(m.WaitingLimit, ":"); ok {
			return state{"waiting for a slot", "running", fmt.Sprintf("It is due, but the concurrency limit of the %s %q is full; it starts when a slot frees.", kind, key)}
		}
		return state{"waiting for a slot", "running", "It is due, but a concurrency limit of its queue or id prefix is full; it starts when a slot frees."}
	case refresh.PhaseScheduled:
		if m.RefreshAt.IsZero() {
			return state{"scheduled", "ok", "Idle; a debounced trigger is planned."}
		}
		return state{"scheduled", "ok", "Idle; the next run is planned."}
	}
	return state{"on demand", "idle", "Idle; it runs when triggered."}
}

// shorten cuts s to n bytes of valid UTF-8, with an ellipsis.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// indentJSON writes v as indented JSON; a json.RawMessage keeps the order
// of its members.
func indentJSON(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			return "null"
		}
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return string(raw)
		}
		return b.String()
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// plural writes n and noun, in the plural unless n is 1: "3 failures",
// "2 retries".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, stem)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// formatAnyDuration is formatDuration of a time.Duration or a
// refresh.Duration.
func formatAnyDuration(v any) string {
	switch d := v.(type) {
	case time.Duration:
		return formatDuration(d)
	case refresh.Duration:
		return formatDuration(time.Duration(d))
	}
	return fmt.Sprint(v)
}

// retrySummary says in words how a policy retries.
func retrySummary(p refresh.Policy) string {
	r := p.Retry
	var s string
	if b := r.Backoff; b != nil {
		s = fmt.Sprintf("%s backoff", b.Strategy)
		if b.Base != 0 {
			s += " from " + formatDuration(time.Duration(b.Base))
		}
		if b.Multiplier != 0 {
			s += fmt.Sprintf(" ×%g", b.Multiplier)
		}
		s += fmt.Sprintf(", up to %s, at most %s", plural(b.MaxRetries, "retry"), formatDuration(time.Duration(b.MaxDelay)))
	} else if len(r.Delays) == 0 {
		s = "none"
	} else {
		ds := make([]string, len(r.Delays))
		for i, d := range r.Delays {
			ds[i] = formatDuration(time.Duration(d))
		}
		s = "after " + strings.Join(ds, ", ")
	}
	if r.Jitter > 0 {
		s += fmt.Sprintf("; jitter ±%g%%", r.Jitter*100)
	}
	if p.Schedule != "" && (r.Align == nil || *r.Align) {
		s += "; aligned with the schedule"
	}
	if len(r.RetryOn) > 0 {
		s += "; only on " + strings.Join(r.RetryOn, ", ")
	}
	if len(r.NonRetryable) > 0 {
		s += "; never on " + strings.Join(r.NonRetryable, ", ")
	}
	return s
}

// outcomeClass is the colour of an attempt's outcome.
func outcomeClass(outcome string) string {
	switch outcome {
	case "success":
		return "ok"
	case "failure", "timeout":
		return "failing"
	}
	return "idle"
}

// took returns how long attempt a ran, to the second (to the millisecond
// under a second).
func took(a refresh.Attempt) time.Duration {
	d := a.FinishedAt.Sub(a.StartedAt)
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
