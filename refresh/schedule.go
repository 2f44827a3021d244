package refresh

import (
	"hash/fnv"
	"time"

	"github.com/freshen-dev/freshen/rrule"
)

// This file holds next(t) and first(t) of docs/policy.md as the
// transitions see them: with a spread (section 6), every occurrence t of
// the schedule becomes t + offset, and next, first (retry alignment
// included) and the catch-up window all use the shifted times.

// schedule returns the model's parsed schedule, or nil for an on-demand
// model. Policies are validated before they are stored, so a schedule that
// no longer parses is treated as none.
func (m Model) schedule() *rrule.Schedule {
	if m.Policy.Schedule == "" {
		return nil
	}
	s, err := rrule.Parse(m.Policy.Schedule, m.Policy.scheduleOptions(m.CreatedAt))
	if err != nil {
		return nil
	}
	return s
}

// SpreadOffset returns the model's shift of every occurrence: (FNV-1a 64
// of the model id) mod spread, in whole seconds; 0 without a spread. The
// same id always gets the same offset, and different ids spread evenly
// over [0, spread).
func (m Model) SpreadOffset() time.Duration {
	secs := uint64(time.Duration(m.Policy.Spread) / time.Second)
	if secs == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(m.ID))
	return time.Duration(h.Sum64()%secs) * time.Second
}

// Next returns next(t) of docs/transitions.md: the first scheduled occurrence
// (shifted by the spread) strictly after t, and false if there is none.
func (m Model) Next(t time.Time) (time.Time, bool) {
	if s := m.schedule(); s != nil {
		off := m.SpreadOffset()
		n, ok := s.Next(t.Add(-off))
		return shifted(n, ok, off)
	}
	return time.Time{}, false
}

// First returns first(t): the first occurrence (shifted by the spread) at
// or after t.
func (m Model) First(t time.Time) (time.Time, bool) {
	if s := m.schedule(); s != nil {
		off := m.SpreadOffset()
		n, ok := s.First(t.Add(-off))
		return shifted(n, ok, off)
	}
	return time.Time{}, false
}

func shifted(t time.Time, ok bool, off time.Duration) (time.Time, bool) {
	if !ok {
		return time.Time{}, false
	}
	return t.Add(off), true
}

// nextOrZero returns next(t), or the zero time (null) if there is none.
func (m Model) nextOrZero(t time.Time) time.Time {
	n, _ := m.Next(t)
	return n
}

// isOccurrence reports whether t is a (shifted) scheduled occurrence.
func (m Model) isOccurrence(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	f, ok := m.First(t)
	return ok && f.Equal(t)
}

// countOccurrences returns how many (shifted) occurrences lie in
// [from, to], counting at most max of them; more reports that there are
// more than max.
func (m Model) countOccurrences(from, to time.Time, max int) (n int, more bool) {
	s := m.schedule()
	if s == nil {
		return 0, false
	}
	off := m.SpreadOffset()
	t, ok := s.First(from.Add(-off))
	for ok && !t.Add(off).After(to) {
		if n == max {
			return n, true
		}
		n++
		t, ok = s.Next(t)
	}
	return n, false
}
