package refresh

import (
	"slices"
	"time"
)

// passLimits is what one scheduler pass knows of the limits that match
// its models (Slots), as the pass hands out starts: the current attempts
// each concurrency limit covers, the starts each rate limit admits (its
// free starts, computed once with Limit.Admits from its log and counted
// down by each start of the pass, a supersession included), the turns
// and the tenants.
type passLimits struct {
	now     time.Time
	limits  []Limit
	names   []string // Limit.Name of each limit
	rates   [][]RateStarts
	tenants []string
	running []int
	free    []int // the starts still admitted, -1 for no rate
	started []int // the starts of the pass
	// turns is, for each limit, the tenant of the last start made under
	// it: as the store passed it (stored), then as the pass starts models.
	turns, stored []string
	// next is, for a rate limit that admits no more starts in the pass,
	// the instant it admits the next (zero until asked).
	next []time.Time
	// held marks the rate limits that held a start back.
	held []bool
	// longest is, for each limit, how long the longest of the pass's
	// models that wait for it after the pass has waited.
	longest []time.Duration
}

// newPassLimits returns the limits of slots at now, the tenants being
// their prefixes (Tenant).
func newPassLimits(slots Slots, tenants []string, now time.Time) *passLimits {
	n := len(slots.Limits)
	p := &passLimits{
		now: now, limits: slots.Limits, rates: slots.Rates, tenants: tenants,
		running: make([]int, n), free: make([]int, n), started: make([]int, n),
		next: make([]time.Time, n), held: make([]bool, n), longest: make([]time.Duration, n),
		turns: make([]string, n),
	}
	p.names = make([]string, n)
	for i, l := range slots.Limits {
		p.names[i] = l.Name()
	}
	copy(p.running, slots.Running)
	copy(p.turns, slots.Turns)
	p.stored = slices.Clone(p.turns)
	for i, l := range slots.Limits {
		p.free[i], _ = l.Admits(p.log(i), now)
	}
	return p
}

// log returns the log of limit i as the store passed it.
func (p *passLimits) log(i int) []RateStarts {
	if i < len(p.rates) {
		return p.rates[i]
	}
	return nil
}

// order returns a copy of due in the order starts are handed out: the
// fair turns of the tenants (FairOrder), each model's after the turn of
// the first limit by kind, then key, that covers it (Slots lists them in
// that order, save those a store read last). The store keeps the order
// of the slice it passed (it finds each row by its position).
func (p *passLimits) order(due []Model) []Model {
	due = slices.Clone(due)
	FairOrder(due, func(m Model) string { return Tenant(m.ID, p.tenants) }, func(m Model) string {
		first := -1
		for i, l := range p.limits {
			if !l.Covers(m) {
				continue
			}
			if f := first; f < 0 || l.Kind < p.limits[f].Kind || l.Kind == p.limits[f].Kind && l.Key < p.limits[f].Key {
				first = i
			}
		}
		if first < 0 {
			return ""
		}
		return p.turns[first]
	})
	return due
}

// hold returns the input of Tick for m: the first limit (in Slots order)
// that would hold a start of m back, a concurrency limit without a free
// slot (a start that supersedes m's own attempt takes over its slot) or a
// rate limit that admits no more starts, with, for a rate limit, the
// instant it admits the next; and m's tenant. i is the limit's index, -1
// for none.
func (p *passLimits) hold(m Model, in *TickInput) (i int) {
	in.Tenant = Tenant(m.ID, p.tenants)
	for i, l := range p.limits {
		if !l.Covers(m) {
			continue
		}
		if l.Concurrent() {
			others := p.running[i]
			if m.Running() {
				others--
			}
			if others >= l.MaxRunning {
				in.FullLimit = l
				return i
			}
		}
		if l.Rated() && p.free[i] == 0 {
			in.FullLimit, in.Until = l, p.nextAdmit(i)
			return i
		}
	}
	return -1
}

// nextAdmit returns when rate limit i, which admits no more starts in the
// pass, admits the next, the starts of the pass counted.
func (p *passLimits) nextAdmit(i int) time.Time {
	if p.next[i].IsZero() {
		log := p.log(i)
		if p.started[i] > 0 {
			log = append(slices.Clone(log), RateStarts{At: p.now, N: p.started[i]})
		}
		_, p.next[i] = p.limits[i].Admits(log, p.now)
	}
	return p.next[i]
}

// record counts what the pass did to m (after is m after its steps; i
// and rate what hold returned and whether the limit held back a start as
// a rate limit; tenant m's tenant): a start counts against each rate
// limit that covers m and passes the turn of each limit that covers m to
// its tenant, an
// attempt that started or ended moves the current attempts of each limit
// that covers it, a wait for a rate limit marks it held, and a model that
// waits counts in its limit's longest wait.
func (p *passLimits) record(i int, rate bool, m, after Model, started bool, tenant string) {
	for j, l := range p.limits {
		if after.WaitingForSlot && p.names[j] == after.WaitingLimit {
			p.longest[j] = max(p.longest[j], p.now.Sub(after.RefreshAt))
		}
		if !l.Covers(m) {
			continue
		}
		if started {
			p.started[j]++
			p.turns[j] = tenant
			if l.Rated() {
				p.free[j]--
			}
		}
		switch {
		case after.Running() && !m.Running():
			p.running[j]++
		case !after.Running() && m.Running():
			p.running[j]--
		}
	}
	if i >= 0 && rate && after.WaitingForSlot {
		p.held[i] = true
	}
}

// starts returns the starts of the pass under each limit, with its turn
// after the pass, for Batch.Starts: under each rate limit (for its log),
// and under each other limit whose turn the pass moved (so that a pass
// without tenants writes nothing more without rate limits).
func (p *passLimits) starts() []LimitStarts {
	var out []LimitStarts
	for i, n := range p.started {
		if n > 0 && (p.limits[i].Rated() || p.turns[i] != p.stored[i]) {
			out = append(out, LimitStarts{Limit: p.names[i], At: p.now, N: n, Tenant: p.turns[i]})
		}
	}
	return out
}

// wakeAt returns the earliest instant a rate limit that held a start back
// in the pass admits the next, or the zero time.
func (p *passLimits) wakeAt() time.Time {
	var at time.Time
	for i, held := range p.held {
		if next := p.next[i]; held && (at.IsZero() || next.Before(at)) {
			at = next
		}
	}
	return at
}

// waits returns, for each limit of the pass, how long the longest of the
// pass's models that wait for it after the pass has waited at now (now -
// refresh_at; 0 if none waits).
func (p *passLimits) waits() []LimitWait {
	out := make([]LimitWait, len(p.limits))
	for i, name := range p.names {
		out[i] = LimitWait{Limit: name, Wait: p.longest[i]}
	}
	return out
}
