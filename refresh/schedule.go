package refresh

import (
	"time"

	"github.com/freshen-dev/freshen/rrule"
)

// This file holds next(t) and first(t) of DESIGN.md section 2 as the
// transitions see them.

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

// Next returns next(t) of DESIGN.md: the first scheduled occurrence strictly
// after t, and false if there is none.
func (m Model) Next(t time.Time) (time.Time, bool) {
	if s := m.schedule(); s != nil {
		return s.Next(t)
	}
	return time.Time{}, false
}

// First returns first(t): the first occurrence at or after t.
func (m Model) First(t time.Time) (time.Time, bool) {
	if s := m.schedule(); s != nil {
		return s.First(t)
	}
	return time.Time{}, false
}

// nextOrZero returns next(t), or the zero time (null) if there is none.
func (m Model) nextOrZero(t time.Time) time.Time {
	n, _ := m.Next(t)
	return n
}
