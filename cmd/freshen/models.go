package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

const modelsUsage = `usage: freshen models <command> [flags] [args]

commands:
  list                          list models (--disabled, --failing, --running, --paused, --queue, --all)
  show ID                       a model: state, disabled reason, next runs in its zone and UTC
  put ID [-f FILE] [--rate-key KEY]
                                create or replace a model from a JSON body (stdin without -f)
  patch ID [-f FILE] [--rate-key KEY]
                                change a model with a JSON merge patch (stdin without -f)
  trigger|enable|pause|resume|cancel ID...
                                act on models
  trigger|enable|pause|resume|cancel --prefix P [--queue Q] [--state S] [--overdue] [--all] [--dry-run]
                                act on every model the selector matches (a bulk action)
  delete ID...                  remove models and their history
  history ID [--limit N]        a model's attempts, newest first
  audit ID [--limit N]          a model's audit: who wrote what, when and why, newest first

Every write (put, patch, the actions, delete) takes --reason TEXT, recorded in the audit.

Every command takes --server (env FRESHEN_SERVER, default http://localhost:8080),
--token (env FRESHEN_TOKEN; prefer the variable: an argument shows in the process
list) and --json (print the API's JSON instead of a table).
`

// runModels is `freshen models <command>`: a client of the HTTP API.
func runModels(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, modelsUsage)
		return 2
	}
	verb, args := args[0], args[1:]
	c := &clientCmd{name: "freshen models " + verb, stdin: stdin, stdout: stdout, stderr: stderr}
	switch verb {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, modelsUsage)
		return 0
	case "list":
		return c.modelsList(ctx, args)
	case "show":
		return c.modelsShow(ctx, args)
	case "put", "patch":
		return c.modelsWrite(ctx, verb, args)
	case refresh.ActionTrigger, refresh.ActionEnable, refresh.ActionPause, refresh.ActionResume, refresh.ActionCancel:
		return c.modelsAct(ctx, verb, args)
	case "delete":
		return c.modelsDelete(ctx, args)
	case "history":
		return c.modelsHistory(ctx, args)
	case "audit":
		return c.modelsAudit(ctx, args)
	}
	fmt.Fprintf(stderr, "freshen models: unknown command %q\n", verb)
	fmt.Fprint(stderr, modelsUsage)
	return 2
}

// boolFlag is a flag that is unset, true (--name or --name=true) or false
// (--name=false).
type boolFlag struct{ p **bool }

func (f boolFlag) IsBoolFlag() bool { return true }

func (f boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("must be true or false")
	}
	*f.p = &v
	return nil
}

func (f boolFlag) String() string {
	if f.p == nil || *f.p == nil {
		return ""
	}
	return strconv.FormatBool(**f.p)
}

func (c *clientCmd) modelsList(ctx context.Context, args []string) int {
	var o refreshhttp.ListOptions
	fs := c.flags("", "Lists models in id order, one page (--limit) or all of them (--all).")
	for _, f := range []struct {
		name string
		p    **bool
		what string
	}{{"disabled", &o.Disabled, "disabled"}, {"failing", &o.Failing, "failing (a failure since the last success)"},
		{"running", &o.Running, "running an attempt"}, {"paused", &o.Paused, "paused"}} {
		fs.Var(boolFlag{f.p}, f.name, "only models "+f.what+"; =false: only the others")
	}
	fs.StringVar(&o.Queue, "queue", "", "only models of this queue")
	fs.StringVar(&o.After, "after", "", "start after this id (the next of a previous page)")
	fs.IntVar(&o.Limit, "limit", 0, "models per page (1 to 1000; default the server's, 100)")
	all := fs.Bool("all", false, "follow the pages to the end")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	var list refreshhttp.ModelList
	for {
		page, err := c.client.List(ctx, o)
		if err != nil {
			return c.fail(err)
		}
		list.Models = append(list.Models, page.Models...)
		list.Next = page.Next
		if !*all || page.Next == "" {
			break
		}
		o.After = page.Next
	}
	if list.Models == nil {
		list.Models = []refreshhttp.Model{}
	}
	if c.json {
		c.printJSON(list)
		return 0
	}
	tw := newTable(c.stdout)
	tw.row("ID", "QUEUE", "STATE", "NEXT RUN", "FAILURES", "LAST SUCCESS")
	for _, m := range list.Models {
		loc := zoneOf(m)
		next := m.RefreshAt
		if m.Disabled || m.Running { // a running model's refresh_at is its deadline
			next = refreshhttp.Time{}
		}
		tw.row(m.ID, m.Queue, modelState(m), formatTime(next, loc), strconv.Itoa(m.ConsecutiveFailures), formatTime(m.LastSuccessAt, loc))
	}
	tw.flush()
	if list.Next != "" {
		fmt.Fprintf(c.stdout, "more: --after %s (or --all)\n", list.Next)
	}
	return 0
}

func (c *clientCmd) modelsShow(ctx context.Context, args []string) int {
	c.flags("ID", "Shows a model: its state, the reason it was disabled, and its next runs in its zone and in UTC.")
	rest, code, ok := c.parse(args, 1, 1)
	if !ok {
		return code
	}
	m, err := c.client.Get(ctx, rest[0])
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(m)
		return 0
	}
	printModel(c.stdout, m)
	return 0
}

func (c *clientCmd) modelsWrite(ctx context.Context, verb string, args []string) int {
	summary := "Creates or replaces a whole model from a JSON body such as\n" +
		`{"queue": "tables", "payload": {...}, "policy": {"schedule": "FREQ=DAILY;BYHOUR=6", "timezone": "Europe/Paris"}}` +
		"\nread from -f FILE, or from stdin."
	if verb == "patch" {
		summary = "Changes part of a model with a JSON merge patch such as {\"policy\": {\"timeout\": \"30m\"}},\nread from -f FILE, or from stdin."
	}
	fs := c.flags("ID", summary)
	file := fs.String("f", "", "file of the JSON body; - or none reads stdin")
	reason := fs.String("reason", "", "why, recorded in the audit (at most 500 bytes)")
	rateKey := fs.String("rate-key", "", `the model's rate_key, the key of the rate_key limits that cover it ("" for none), set in the body`)
	rest, code, ok := c.parse(args, 1, 1)
	if !ok {
		return code
	}
	var members []string // the names of the flags that set a body member
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "reason" || f.Name == "rate-key" {
			members = append(members, f.Name)
		}
	})
	var body []byte
	var err error
	switch {
	case *file == "" && verb == "patch" && len(members) > 0 && isTerminal(c.stdin):
		// A patch of the flags' members alone, typed at a terminal.
	case *file == "" || *file == "-":
		body, err = io.ReadAll(c.stdin)
	default:
		body, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: read body: %v\n", c.name, err)
		return 2
	}
	if verb == "patch" && len(members) > 0 && len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}") // a patch of the flags' members alone
	}
	for _, name := range members {
		member, value := "reason", *reason
		if name == "rate-key" {
			member, value = "rate_key", *rateKey
		} else if value == "" {
			continue
		}
		if body, err = withMember(body, member, value); err != nil {
			fmt.Fprintf(c.stderr, "%s: --%s: %v\n", c.name, name, err)
			return 2
		}
	}
	var m refreshhttp.ModelWithRuns
	what := "patched"
	if verb == "put" {
		var created bool
		m, created, err = c.client.Put(ctx, rest[0], body)
		what = "replaced"
		if created {
			what = "created"
		}
	} else {
		m, err = c.client.Patch(ctx, rest[0], body)
	}
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(m)
		return 0
	}
	fmt.Fprintf(c.stdout, "%s %s\n\n", what, m.ID)
	printModel(c.stdout, m)
	return 0
}

func (c *clientCmd) modelsAct(ctx context.Context, action string, args []string) int {
	fs := c.flags("ID... | --prefix P [--queue Q] [--state S] [--overdue] [--all] [--dry-run]",
		"Applies "+action+" to each model (docs/transitions.md); an action that changes nothing says so.\n"+
			"With selector flags instead of ids, applies it to every model they match (a bulk action);\n"+
			"--dry-run only counts them, and matching every model needs --all.")
	reason := fs.String("reason", "", "why, recorded in the audit (at most 500 bytes)")
	var req refreshhttp.BulkRequest
	fs.StringVar(&req.Selector.Prefix, "prefix", "", "bulk: models whose id starts with this")
	fs.StringVar(&req.Selector.Queue, "queue", "", "bulk: models of this queue")
	fs.StringVar(&req.Selector.State, "state", "", "bulk: models in this state ("+strings.Join(refresh.States, ", ")+")")
	fs.Var(boolFlag{&req.Selector.Overdue}, "overdue", "bulk: models whose freshness promise is broken; =false: kept")
	fs.BoolVar(&req.All, "all", false, "bulk: every model (without other selector flags)")
	fs.BoolVar(&req.DryRun, "dry-run", false, "bulk: count the models matched and those the action would change; change nothing")
	ids, code, ok := c.parse(args, 0, -1)
	if !ok {
		return code
	}
	bulk := req.Selector != (refreshhttp.BulkSelector{}) || req.All || req.DryRun
	switch {
	case bulk && len(ids) > 0:
		fmt.Fprintf(c.stderr, "%s: give model ids or selector flags (--prefix, --queue, --state, --overdue, --all), not both\n", c.name)
		return 2
	case !bulk && len(ids) == 0:
		c.fs.Usage()
		return 2
	case bulk && req.Selector == (refreshhttp.BulkSelector{}) && !req.All:
		fmt.Fprintf(c.stderr, "%s: name the models to %s: a selector flag (--prefix, --queue, --state, --overdue), or --all for every model\n", c.name, action)
		return 2
	case bulk:
		req.Reason = *reason
		return c.modelsBulk(ctx, action, req)
	}
	var results []refreshhttp.ActResult
	answers := []any{} // with --json: each result, or the API's error
	status := 0
	for _, id := range ids {
		res, err := c.client.ActWithReason(ctx, id, action, *reason)
		if err != nil {
			status = max(status, exitStatus(err))
			fmt.Fprintf(c.stderr, "%s: %s: %v\n", c.name, id, err)
			answers = append(answers, jsonError(err, id))
			continue
		}
		results = append(results, res)
		answers = append(answers, res)
	}
	if c.json {
		c.printJSON(answers)
	} else if len(results) > 0 {
		tw := newTable(c.stdout)
		tw.row("ID", "CHANGED", "STATE", "NEXT RUN", "WHY")
		for _, r := range results {
			changed := "yes"
			if !r.Changed {
				changed = "no"
			}
			next := refreshhttp.Time{}
			if len(r.Model.NextRuns) > 0 {
				next = r.Model.NextRuns[0]
			}
			loc := zoneOf(r.Model.Model)
			tw.row(r.Model.ID, changed, modelState(r.Model.Model), formatTime(next, loc), inZone(r.Decision.Why, loc))
		}
		tw.flush()
	}
	return status
}

// rfc3339UTC matches the times a decision's why writes: RFC 3339 in UTC.
var rfc3339UTC = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b`)

// inZone returns the text why with its times written as the tables write
// them, in loc, so that a why reads in the zone of the NEXT RUN beside it.
func inZone(why string, loc *time.Location) string {
	return rfc3339UTC.ReplaceAllStringFunc(why, func(s string) string {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return s
		}
		return formatTime(refreshhttp.Time(t), loc)
	})
}

// modelsBulk applies a bulk action and says what it did: exit status 1
// when a model failed.
func (c *clientCmd) modelsBulk(ctx context.Context, action string, req refreshhttp.BulkRequest) int {
	res, err := c.client.Bulk(ctx, action, req)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(res)
	} else if res.DryRun {
		fmt.Fprintf(c.stdout, "dry run: %d model(s) matched, %s would change %d; nothing changed\n", res.Matched, action, res.WouldChange)
	} else {
		fmt.Fprintf(c.stdout, "%s: %d model(s) matched, %d changed, %d unchanged, %d failed\n", action, res.Matched, res.Changed, res.Unchanged, len(res.Failed))
		if len(res.Failed) > 0 {
			tw := newTable(c.stdout)
			tw.row("ID", "ERROR")
			for _, f := range res.Failed {
				tw.row(f.ID, f.Error)
			}
			tw.flush()
		}
	}
	if len(res.Failed) > 0 {
		return 1
	}
	return 0
}

func (c *clientCmd) modelsDelete(ctx context.Context, args []string) int {
	fs := c.flags("ID...", "Removes each model and its history.")
	reason := fs.String("reason", "", "why, recorded in the audit (at most 500 bytes)")
	ids, code, ok := c.parse(args, 1, -1)
	if !ok {
		return code
	}
	status := 0
	for _, id := range ids {
		if err := c.client.DeleteWithReason(ctx, id, *reason); err != nil {
			fmt.Fprintf(c.stderr, "%s: %s: %v\n", c.name, id, err)
			if c.json {
				c.printJSON(jsonError(err, id))
			}
			status = max(status, exitStatus(err))
			continue
		}
		if !c.json {
			fmt.Fprintf(c.stdout, "deleted %s\n", id)
		}
	}
	return status
}

func (c *clientCmd) modelsHistory(ctx context.Context, args []string) int {
	fs := c.flags("ID", "Shows a model's attempts, newest first: number, start (in the model's zone), duration,\noutcome, error, the decision of a failure and what it planned.")
	limit := fs.Int("limit", 20, "attempts to show (1 to 1000)")
	before := fs.String("before", "", "show the attempts started before this RFC 3339 time (the next of the previous page, printed with --json)")
	rest, code, ok := c.parse(args, 1, 1)
	if !ok {
		return code
	}
	m, err := c.client.Get(ctx, rest[0])
	if err != nil {
		return c.fail(err)
	}
	list, err := c.client.Attempts(ctx, rest[0], *before, *limit)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(list)
		return 0
	}
	loc := zoneOf(m.Model)
	tw := newTable(c.stdout)
	tw.row("NO", "STARTED", "DURATION", "OUTCOME", "KIND", "MESSAGE", "DECISION", "NEXT")
	for _, a := range list.Attempts {
		duration, outcome := "-", string(a.Outcome)
		if outcome == "" {
			outcome = "running"
		}
		if started, finished := time.Time(a.StartedAt), time.Time(a.FinishedAt); !finished.IsZero() {
			duration = finished.Sub(started).String()
		}
		tw.row(strconv.Itoa(a.AttemptNo), formatTime(a.StartedAt, loc), duration, outcome, dash(a.ErrorKind),
			dash(cut(a.ErrorMessage, 60)), dash(a.Decision), nextPlan(a, m.Policy.Schedule != ""))
	}
	tw.flush()
	return 0
}

func (c *clientCmd) modelsAudit(ctx context.Context, args []string) int {
	fs := c.flags("ID", "Shows a model's audit, newest first: when, who (the token's name), what, why, and the\ndefinition fields a write changed. It outlives the model: a deleted model's ends with its delete.")
	limit := fs.Int("limit", 20, "entries to show (1 to 1000)")
	after := fs.String("after", "", "start after this entry (the next of a previous page)")
	rest, code, ok := c.parse(args, 1, 1)
	if !ok {
		return code
	}
	list, err := c.client.Audit(ctx, rest[0], *after, *limit)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(list)
		return 0
	}
	tw := newTable(c.stdout)
	tw.row("AT", "ACTOR", "ACTION", "REASON", "CHANGES")
	for _, e := range list.Audit {
		action := e.Action
		if e.Bulk {
			action += " (bulk)"
		}
		if e.Trigger {
			action += " + trigger"
		}
		var changes []string
		for _, ch := range e.Changes {
			changes = append(changes, fmt.Sprintf("%s: %s -> %s", ch.Field, auditValue(ch.Before), auditValue(ch.After)))
		}
		tw.row(formatTime(e.At, time.UTC), e.Actor, action, dash(cut(e.Reason, 60)), dash(cut(strings.Join(changes, "; "), 120)))
	}
	tw.flush()
	if list.Next != "" {
		fmt.Fprintf(c.stdout, "more: --after %s\n", list.Next)
	}
	return 0
}

// auditValue writes a value of an audited change, "-" when absent.
func auditValue(v json.RawMessage) string {
	if len(v) == 0 {
		return "-"
	}
	return string(v)
}

// isTerminal reports whether r is a terminal, from which a body is not
// read unless asked for (-f -).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// withMember returns the JSON object body with the string member name
// added first; the server refuses a body that has one already (a
// duplicate field).
func withMember(body []byte, name, value string) ([]byte, error) {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return nil, errors.New("needs a JSON object body")
	}
	n, _ := json.Marshal(name) // a string always encodes
	v, _ := json.Marshal(value)
	out := append(append(append([]byte("{"), n...), ':'), v...)
	rest := bytes.TrimSpace(trimmed[1:])
	if !bytes.HasPrefix(rest, []byte("}")) {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// nextPlan says what an attempt's end planned.
func nextPlan(a refreshhttp.Attempt, scheduled bool) string {
	switch a.Decision {
	case refresh.DecisionRetry:
		if a.Delay != nil {
			return "retry after " + time.Duration(*a.Delay).String()
		}
		return "retry"
	case refresh.DecisionRetryAligned:
		return "retry at the next scheduled run"
	case refresh.DecisionWaitNext:
		return "new round at the next scheduled run"
	case refresh.DecisionDisable:
		return "disabled"
	}
	if (a.Outcome == refresh.OutcomeSuccess || a.Outcome == refresh.AttemptUnchanged) && scheduled {
		return "next scheduled run"
	}
	return "-"
}

// printModel prints a model for a person: one field a line, times in the
// model's zone with UTC beside them.
func printModel(w io.Writer, m refreshhttp.ModelWithRuns) {
	loc := zoneOf(m.Model)
	both := func(t refreshhttp.Time) string {
		if time.Time(t).IsZero() {
			return "-"
		}
		if loc == time.UTC {
			return formatTime(t, time.UTC)
		}
		return formatTime(t, loc) + " (" + formatTime(t, time.UTC) + ")"
	}
	tw := newTable(w)
	tw.row("id", m.ID)
	tw.row("queue", m.Queue)
	if m.RateKey != "" {
		tw.row("rate key", string(m.RateKey))
	}
	tw.row("state", modelState(m.Model))
	if m.Disabled {
		tw.row("disabled at", both(m.DisabledAt))
		tw.row("disabled reason", string(m.DisabledReason))
	}
	if m.StatusMessage != "" {
		tw.row("status", string(m.StatusMessage))
	}
	printExtensions(tw, m, both)
	if m.Running {
		tw.row("attempt", fmt.Sprintf("%d, started %s, deadline %s", m.AttemptNo, both(m.StartedAt), both(m.DeadlineAt)))
	} else if m.AttemptNo > 0 {
		tw.row("attempt", fmt.Sprintf("%d of the round so far", m.AttemptNo))
	}
	if m.ConsecutiveFailures > 0 {
		tw.row("failures", fmt.Sprintf("%d since %s", m.ConsecutiveFailures, both(m.FailingSince)))
	} else {
		tw.row("failures", "0")
	}
	tw.row("last success", both(m.LastSuccessAt))
	if t := time.Time(m.LastChangedAt); !t.IsZero() && t.Before(time.Time(m.LastSuccessAt)) {
		tw.row("last changed", both(m.LastChangedAt)+" (the successes since found the data unchanged)")
	}
	if e := m.LastError; e != nil {
		tw.row("last error", fmt.Sprintf("%s: %s (%s)", e.Kind, e.Message, both(e.At)))
	}
	schedule := m.Policy.Schedule
	if schedule == "" {
		schedule = "none (on demand)"
	}
	for i, line := range strings.Split(schedule, "\n") {
		key := ""
		if i == 0 {
			key = "schedule"
		}
		tw.row(key, line)
	}
	tw.row("timezone", loc.String())
	if m.SpreadOffset != nil {
		tw.row("spread offset", fmt.Sprintf("%s (every scheduled run shifted by it; spread %s)",
			time.Duration(*m.SpreadOffset), time.Duration(m.Policy.Spread)))
	}
	tw.row("timeout", time.Duration(m.Policy.Timeout).String())
	tw.row("created", both(m.CreatedAt))
	payload := "null"
	if len(m.Payload) > 0 {
		payload = string(m.Payload)
	}
	tw.row("payload", cut(payload, 200))
	tw.flush()

	fmt.Fprintln(w)
	if len(m.NextRuns) == 0 {
		fmt.Fprintln(w, "next runs: none")
		return
	}
	tw = newTable(w)
	if loc == time.UTC {
		tw.row("NEXT RUNS (UTC)")
	} else {
		tw.row("NEXT RUNS ("+loc.String()+")", "UTC")
	}
	for _, t := range m.NextRuns {
		if loc == time.UTC {
			tw.row(formatTime(t, time.UTC))
		} else {
			tw.row(formatTime(t, loc), formatTime(t, time.UTC))
		}
	}
	tw.flush()
}

// printExtensions prints the rows of the extensions that apply to m (none
// for a model that uses none): its upstreams with their status and what it
// waits for, a wait for a concurrency slot or a rate limit, a broken or kept freshness
// promise, an open debounce window, a snooze. both writes a time.
func printExtensions(tw *table, m refreshhttp.ModelWithRuns, both func(refreshhttp.Time) string) {
	for i, u := range m.UpstreamStatus {
		key := ""
		if i == 0 {
			key = "upstreams"
			if m.UpstreamsMode == refresh.UpstreamsAny && len(m.UpstreamStatus) > 1 {
				key = "upstreams (any)"
			}
		}
		status := u.Status
		switch u.Status {
		case refreshhttp.UpstreamDisabled:
			status += ": " + string(u.DisabledReason)
		case refreshhttp.UpstreamChanged:
			status += " " + both(u.LastChangedAt)
		case refreshhttp.UpstreamMissing:
			status += " (no model has this id)"
		}
		tw.row(key, u.ID, status)
	}
	if m.WaitingFor != "" {
		tw.row("waiting", string(m.WaitingFor))
	}
	switch {
	case m.WaitingForSlot && m.WaitingLimit != nil && !time.Time(m.WaitingUntil).IsZero():
		tw.row("waiting for slot", "yes (due; the rate limit "+*m.WaitingLimit+" admits its next start at "+both(m.WaitingUntil)+")")
	case m.WaitingForSlot && m.WaitingLimit != nil:
		tw.row("waiting for slot", "yes (due, but the concurrency limit "+*m.WaitingLimit+" is full)")
	case m.WaitingForSlot:
		tw.row("waiting for slot", "yes (due, but a concurrency limit of its queue or id prefix is full)")
	}
	switch {
	case !time.Time(m.OverdueSince).IsZero():
		tw.row("overdue since", fmt.Sprintf("%s (older than its max_age of %s)", both(m.OverdueSince), time.Duration(m.Policy.MaxAge)))
	case !time.Time(m.OverdueAt).IsZero():
		tw.row("overdue at", both(m.OverdueAt)+" unless it succeeds before")
	}
	if !time.Time(m.DebounceAt).IsZero() {
		tw.row("debounce at", both(m.DebounceAt)+" (the debounced triggers take effect)")
	}
	if !time.Time(m.SnoozedSince).IsZero() {
		tw.row("snoozed since", both(m.SnoozedSince)+" (the worker said its input is not ready)")
	}
}

// modelState writes the state the API computed for a model (its state
// field: disabled, paused, running, snoozed, retrying, waiting_for_slot,
// scheduled or idle), with the attempt of a running model and the failures
// of a retrying one. It never reads the local clock: the server's is the
// one that counts.
func modelState(m refreshhttp.Model) string {
	switch m.State {
	case "":
		return "-"
	case refresh.PhaseRunning:
		return fmt.Sprintf("%s (attempt %d)", m.State, m.AttemptNo)
	case refresh.PhaseRetrying:
		return fmt.Sprintf("%s (%d failed)", m.State, m.ConsecutiveFailures)
	case refresh.PhasePaused:
		if m.Running {
			return fmt.Sprintf("%s (attempt %d still running)", m.State, m.AttemptNo)
		}
	}
	return m.State
}

// zoneOf returns the zone of a model's policy, UTC if it names none (or
// one this binary does not know).
func zoneOf(m refreshhttp.Model) *time.Location {
	if m.Policy.Timezone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(m.Policy.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// formatTime writes t in loc with the zone's abbreviation, "-" if zero.
func formatTime(t refreshhttp.Time, loc *time.Location) string {
	if time.Time(t).IsZero() {
		return "-"
	}
	if loc == time.UTC {
		return time.Time(t).UTC().Format("2006-01-02 15:04:05Z")
	}
	return time.Time(t).In(loc).Format("2006-01-02 15:04:05 MST")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cut shortens s to n characters for a table, on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table { return &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)} }

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "\t", " "), "\n", " ")
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { _ = t.tw.Flush() }
