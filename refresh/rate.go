package refresh

import (
	"slices"
	"strings"
	"time"
)

// This file holds the rate limits of docs/policy.md as far as one pass of
// the scheduler sees them: a limit with max_starts admits at most
// MaxStarts starts in any window of Per (and, with a burst, at most Burst
// in any window of Per*Burst/MaxStarts), counted at the start instant. The
// stores keep each rate limit's starts of the last Per (its log) and pass
// it to the scheduler with the slots (Slots.Rates); the scheduler records
// the starts it makes (Batch.Starts), which the store appends to the log
// in the pass's transaction. The passes of all instances take turns
// (the stores' slots lock), so the count is exact across instances.

// RateStarts is one entry of a rate limit's log: N starts at At.
type RateStarts struct {
	At time.Time
	N  int
}

// LimitStarts is what a pass records for a limit under which it started
// models (a limit without max_starts only when its turn moved): N starts,
// of the limit named Limit (Limit.Name), at At, the last of them by a
// model of Tenant (the limit's turn from then on, FairOrder). The stores
// log the starts of rate limits only, and keep the turn of every limit.
type LimitStarts struct {
	Limit  string
	At     time.Time
	N      int
	Tenant string
}

// burstWindow is the window in which at most Burst starts count, or 0
// when l sets no burst bound beyond MaxStarts.
func (l Limit) burstWindow() time.Duration {
	if l.Burst <= 0 || l.Burst >= l.MaxStarts {
		return 0
	}
	per := time.Duration(l.Per)
	// Rounded up: a window a nanosecond too short would admit one start
	// too many.
	return time.Duration((int64(per)*int64(l.Burst) + int64(l.MaxStarts) - 1) / int64(l.MaxStarts))
}

// Admits returns how many starts the rate limit l admits at now, given
// its log (entries in any order; those older than Per are ignored), and
// when it admits the next one if it admits none now (now otherwise). An
// entry at At counts in the windows that end before At+window: a start at
// exactly At+Per is in a new window. A limit without max_starts admits
// any number (free < 0).
func (l Limit) Admits(log []RateStarts, now time.Time) (free int, next time.Time) {
	if !l.Rated() {
		return -1, now
	}
	free, next = admits(log, now, time.Duration(l.Per), l.MaxStarts)
	if w := l.burstWindow(); w > 0 {
		bf, bn := admits(log, now, w, l.Burst)
		free = min(free, bf)
		if bn.After(next) {
			next = bn
		}
	}
	return max(free, 0), next
}

// admits is Admits for one window of length w and at most n starts.
func admits(log []RateStarts, now time.Time, w time.Duration, n int) (int, time.Time) {
	used := 0
	var in []RateStarts
	for _, e := range log {
		if e.At.Add(w).After(now) {
			used += e.N
			in = append(in, e)
		}
	}
	if used < n {
		return n - used, now
	}
	// The next start is admitted once enough of the oldest entries leave
	// the window to bring the count under n (entries of one instant leave
	// together).
	slices.SortFunc(in, func(a, b RateStarts) int { return a.At.Compare(b.At) })
	for _, e := range in {
		used -= e.N
		if used < n {
			return 0, e.At.Add(w)
		}
	}
	return 0, now
}

// Tenant returns the tenant of the model id among the tenant prefixes
// (the keys of the prefix limits and the prefixes of the tokens): the
// longest one id starts with, or "" (one turn for the models under none).
func Tenant(id string, prefixes []string) string {
	best := ""
	for _, p := range prefixes {
		if len(p) > len(best) && strings.HasPrefix(id, p) {
			best = p
		}
	}
	return best
}
