package memory

import (
	"slices"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// rateLogs are the logs of the rate limits (docs/policy.md): for each
// limit with max_starts, by name, the starts of its last per, one entry
// per pass that started models under it (refresh.RateStarts).
type rateLogs map[string][]refresh.RateStarts

// window returns the entries of l's log within its per before now (nil
// for a limit without max_starts or with no such entry).
func (r rateLogs) window(l refresh.Limit, now time.Time) []refresh.RateStarts {
	if !l.Rated() {
		return nil
	}
	var out []refresh.RateStarts
	for _, e := range r[l.Name()] {
		if e.At.Add(time.Duration(l.Per)).After(now) {
			out = append(out, e)
		}
	}
	return out
}

// add appends the starts of a batch to the logs of the rate limits among
// limits that they name, and drops each entry older than its limit's per
// at the start appended.
func (r rateLogs) add(limits map[[2]string]refresh.Limit, starts []refresh.LimitStarts) {
	for _, st := range starts {
		l, _ := limitNamed(limits, st.Limit)
		if !l.Rated() || st.N <= 0 {
			continue
		}
		per := time.Duration(l.Per)
		log := slices.DeleteFunc(r[st.Limit], func(e refresh.RateStarts) bool { return !e.At.Add(per).After(st.At) })
		r[st.Limit] = append(log, refresh.RateStarts{At: st.At, N: st.N})
	}
}

// drop deletes the log of limit l.
func (r rateLogs) drop(l refresh.Limit) { delete(r, l.Name()) }

// turns are the turns of the limits, by name: the tenant of the last
// start made under each (refresh.Slots.Turns; "" for none).
type turns map[string]string

// add keeps the tenant of each of starts as its limit's turn, for the
// limits among limits that they name.
func (t turns) add(limits map[[2]string]refresh.Limit, starts []refresh.LimitStarts) {
	for _, st := range starts {
		if _, ok := limitNamed(limits, st.Limit); ok {
			t[st.Limit] = st.Tenant
		}
	}
}

// limitNamed returns the limit among limits whose Name is name.
func limitNamed(limits map[[2]string]refresh.Limit, name string) (refresh.Limit, bool) {
	kind, key, _ := strings.Cut(name, ":") // a kind has no colon
	l, ok := limits[[2]string{kind, key}]
	return l, ok
}
