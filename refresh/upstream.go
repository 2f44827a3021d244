package refresh

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file holds the upstreams of docs/policy.md. A model may name
// upstreams (model fields upstreams and upstreams_mode, next to queue).
// Every success but an unchanged one sets last_changed_at. After an
// upstream's success, a dependent whose condition holds (UpstreamsReady)
// gets a trigger with cause upstream (UpstreamTrigger): it goes through
// the debounce window if the dependent has one, plans the start for resume
// on a paused dependent, and leaves a disabled dependent disabled.
// Failures, retries, snoozes, timeouts and unchanged successes of an
// upstream propagate nothing. A missing upstream is allowed, blocks all
// mode, and is shown as missing (UpstreamWaiting). Cycles are refused,
// naming the cycle (FindCycle, CheckUpstreamCycle).

// Upstream modes (Model.UpstreamsMode). "" means all.
const (
	// UpstreamsAll: every upstream has changed since the dependent's last
	// success.
	UpstreamsAll = "all"
	// UpstreamsAny: at least one has.
	UpstreamsAny = "any"
)

// DefaultMaxUpstreams is the bound of a model's upstreams list that
// CheckUpstreams applies when given none.
const DefaultMaxUpstreams = 100

// Upstream is what a dependent needs to know of one of its upstreams.
type Upstream struct {
	ID            string
	LastChangedAt time.Time
	// Disabled, DisabledReason and Paused explain a wait (UpstreamWaiting).
	Disabled       bool
	DisabledReason string
	Paused         bool
}

// UpstreamOf returns the view of model u as an upstream.
func UpstreamOf(u Model) Upstream {
	return Upstream{ID: u.ID, LastChangedAt: u.LastChangedAt, Disabled: u.Disabled(), DisabledReason: u.DisabledReason, Paused: u.Paused}
}

// changedFor reports whether upstream u has changed since dep's last
// success: u's last_changed_at is later than dep's last_success_at, or
// set at all if dep never succeeded.
func (u Upstream) changedFor(dep Model) bool {
	return !u.LastChangedAt.IsZero() && u.LastChangedAt.After(dep.LastSuccessAt)
}

// UpstreamsReady reports whether dep's upstream condition holds: every
// upstream (in any mode, at least one) has changed since dep's last
// success. ups holds the upstreams that exist, by id; an id of
// dep.Upstreams missing from it is a missing upstream, which never
// changed. A model without upstreams is never ready.
func UpstreamsReady(dep Model, ups map[string]Upstream) bool {
	if len(dep.Upstreams) == 0 {
		return false
	}
	for _, id := range dep.Upstreams {
		u, ok := ups[id]
		changed := ok && u.changedFor(dep)
		if dep.UpstreamsMode == UpstreamsAny && changed {
			return true
		}
		if dep.UpstreamsMode != UpstreamsAny && !changed {
			return false
		}
	}
	return dep.UpstreamsMode != UpstreamsAny
}

// UpstreamTrigger decides what the success of upstream from, which changed
// the data, brings to its dependent dep at now (ups as for
// UpstreamsReady, with from's new last_changed_at). If dep's condition
// holds, dep gets TriggerFrom(dep, CauseUpstream, now): a trigger event
// with Cause upstream and Upstream from (debounced if dep has
// trigger_debounce; planned for resume if dep is paused; Unchanged, and
// nothing written, if dep is disabled). Otherwise nothing changes
// (Decision.Event "") and Why says what dep waits for (UpstreamWaiting).
// Also nothing changes if from is not one of dep's upstreams or has not
// changed since dep's last success (a stale call).
func UpstreamTrigger(dep Model, ups map[string]Upstream, from string, now time.Time) (Model, Decision) {
	u, ok := ups[from]
	switch {
	case !slices.Contains(dep.Upstreams, from):
		return dep, Decision{Rule: "upstream", Upstream: from, Why: quoteShort(from) + " is not an upstream of the model"}
	case !ok || !u.changedFor(dep):
		return dep, Decision{Rule: "upstream", Upstream: from,
			Why: "upstream " + from + " has not changed since the model's last success at " + ts(dep.LastSuccessAt)}
	case !UpstreamsReady(dep, ups):
		return dep, Decision{Rule: "upstream", Upstream: from, Why: UpstreamWaiting(dep, ups)}
	}
	m, d := TriggerFrom(dep, CauseUpstream, now)
	d.Upstream = from
	cond := "its only upstream"
	switch {
	case len(dep.Upstreams) > 1 && dep.UpstreamsMode == UpstreamsAny:
		cond = "one of its upstreams (mode any)"
	case len(dep.Upstreams) > 1:
		cond = "the last of its upstreams to change since its last success"
	}
	d.Why = fmt.Sprintf("upstream %s, %s, changed at %s; %s", from, cond, ts(u.LastChangedAt), d.Why)
	return m, d
}

// maxWaitClauses bounds the upstreams an explanation names.
const maxWaitClauses = 5

// UpstreamWaiting returns the customer-facing explanation of what dep
// waits for, or "" when its condition holds or it has no upstreams: in all
// mode, each upstream that has not changed since dep's last success; in
// any mode, all of them. Each reads "orders, whose refresh is disabled:
// <its disabled reason>", "orders, whose refresh is paused", "orders,
// which does not exist" or "orders to refresh", e.g. "waiting for orders,
// whose refresh is disabled: Refresh disabled after 3 failed
// attempt(s).". At most 5 are named, then "and N more". The API, the CLI
// and the dashboard show it next to the model.
func UpstreamWaiting(dep Model, ups map[string]Upstream) string {
	if len(dep.Upstreams) == 0 || UpstreamsReady(dep, ups) {
		return ""
	}
	var clauses []string
	more := 0
	for _, id := range dep.Upstreams {
		u, ok := ups[id]
		if ok && u.changedFor(dep) {
			continue
		}
		if len(clauses) == maxWaitClauses {
			more++
			continue
		}
		switch {
		case !ok:
			clauses = append(clauses, id+", which does not exist")
		case u.Disabled:
			clauses = append(clauses, id+", whose refresh is disabled: "+u.DisabledReason)
		case u.Paused:
			clauses = append(clauses, id+", whose refresh is paused")
		default:
			clauses = append(clauses, id+" to refresh")
		}
	}
	s := "waiting for "
	if dep.UpstreamsMode == UpstreamsAny && len(dep.Upstreams) > 1 {
		s = "waiting for any of its upstreams: "
	}
	s += strings.Join(clauses, "; ")
	if more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}

// CheckUpstreams checks a model's upstreams and upstreams_mode as a write
// gives them and returns a *ValidationError naming each broken rule
// (upstreams: at most max entries, DefaultMaxUpstreams if max <= 0;
// upstreams[i]: a valid model id, not the model itself, not repeated;
// upstreams_mode: "all", "any" or left out), or nil. Cycles through other
// models are the store's to find (CheckUpstreamCycle), and prefix limits
// of tokens the API's.
func CheckUpstreams(id string, upstreams []string, mode string, max int) error {
	if max <= 0 {
		max = DefaultMaxUpstreams
	}
	var errs errorList
	switch mode {
	case "", UpstreamsAll, UpstreamsAny:
	default:
		errs.add("upstreams_mode", "must be %q or %q, got %s", UpstreamsAll, UpstreamsAny, quoteShort(mode))
	}
	if len(upstreams) > max {
		errs.add("upstreams", "must have at most %d entries, got %d", max, len(upstreams))
		return errs.err()
	}
	seen := make(map[string]int, len(upstreams))
	for i, u := range upstreams {
		field := fmt.Sprintf("upstreams[%d]", i)
		switch j, dup := seen[u]; {
		case !ValidID(u):
			errs.add(field, "%s, got %s", IDRule, quoteShort(u))
		case u == id:
			errs.add(field, "must not name the model itself")
		case dup:
			errs.add(field, "repeats upstreams[%d]", j)
		default:
			seen[u] = i
		}
	}
	return errs.err()
}

// FindCycle returns a cycle of graph (model id -> its upstreams) as the
// path that closes it, e.g. [a b c a] for a -> b -> c -> a, or nil if
// graph has none. Ids graph does not hold have no upstreams. The answer is
// the same for the same graph: ids are visited in order. It costs time in
// proportion to the size of graph and does not recurse.
func FindCycle(graph map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	color := make(map[string]int, len(graph))
	ids := make([]string, 0, len(graph))
	for id := range graph {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	type frame struct {
		id   string
		next int
	}
	for _, root := range ids {
		if color[root] != unseen {
			continue
		}
		stack := []frame{{id: root}}
		color[root] = open
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			ups := graph[top.id]
			if top.next == len(ups) {
				color[top.id] = done
				stack = stack[:len(stack)-1]
				continue
			}
			u := ups[top.next]
			top.next++
			switch color[u] {
			case open:
				var cycle []string
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i].id == u {
						for _, f := range stack[i:] {
							cycle = append(cycle, f.id)
						}
						return append(cycle, u)
					}
				}
			case unseen:
				color[u] = open
				stack = append(stack, frame{id: u})
			}
		}
	}
	return nil
}

// CheckUpstreamCycle returns a *ValidationError naming the cycle, e.g.
// "upstreams: would make a cycle: a → b → a" (a names b as an upstream,
// which names a), if model id with the given upstreams would close one in
// graph (the upstreams of the other models, as stored: at least those
// reachable from upstreams), and nil otherwise. It names the shortest
// cycle through id; cycles elsewhere in graph, which the stores never
// keep, are not its concern. graph is not modified. The store calls it
// when a write sets upstreams, in the transaction that writes them, after
// CheckUpstreams.
func CheckUpstreamCycle(id string, upstreams []string, graph map[string][]string) error {
	edges := func(n string) []string {
		if n == id {
			return upstreams
		}
		return graph[n]
	}
	// Breadth first from id: the first edge back to id closes the
	// shortest cycle.
	parent := map[string]string{id: ""}
	queue := []string{id}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, u := range edges(n) {
			if u == id {
				path := []string{id}
				for p := n; p != id; p = parent[p] {
					path = append(path, p)
				}
				path = append(path, id)
				slices.Reverse(path[1 : len(path)-1])
				var errs errorList
				errs.add("upstreams", "would make a cycle: %s", strings.Join(path, " → "))
				return errs.err()
			}
			if _, seen := parent[u]; !seen {
				parent[u] = n
				queue = append(queue, u)
			}
		}
	}
	return nil
}

// UpstreamCovered reports whether dep already has a run that covers the
// change of upstream u (at u.LastChangedAt), so that a second delivery of
// the same success brings no second trigger: an attempt that started at or
// after the change, a start planned at or after it and due at now (a
// trigger not yet started, a paused model's start planned for resume), or
// a debounce window opened at or after it.
func UpstreamCovered(dep Model, u Upstream, now time.Time) bool {
	changed := u.LastChangedAt
	switch {
	case changed.IsZero():
		return false
	case dep.Running():
		return !dep.StartedAt.Before(changed)
	case !dep.DebounceAt.IsZero() && !dep.DebounceSince.Before(changed):
		return true
	}
	return !dep.RefreshAt.IsZero() && !dep.RefreshAt.Before(changed) && !dep.RefreshAt.After(now)
}
