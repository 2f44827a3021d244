// Package rrule parses RFC 5545 recurrence text and answers "when is the
// next occurrence?".
//
// # Text
//
// A schedule is either RFC 5545 lines or a bare RRULE body:
//
//	DTSTART;TZID=Europe/Paris:20260101T000000
//	RRULE:FREQ=DAILY;BYHOUR=6,16
//	RDATE;TZID=Europe/Paris:20260105T120000
//	EXDATE;TZID=Europe/Paris:20260106T060000
//
//	FREQ=HOURLY;INTERVAL=2
//
// DTSTART;TZID=X is read in zone X, DTSTART:...Z in UTC, and a floating
// DTSTART (neither) in Options.Timezone. Without DTSTART, the rule is
// anchored at 00:00:00 of Options.Created's day in Options.Timezone, so
// FREQ=HOURLY;INTERVAL=2 means every even hour. Floating RDATE, EXDATE and
// UNTIL values are read in DTSTART's zone. Several RRULE lines are allowed;
// the schedule is their union with the RDATEs, minus the EXDATEs (matched
// as instants). Folded lines (RFC 5545 3.1) are unfolded.
//
// Rules expand as in rrule-go and python-dateutil, on which many calendars
// agree, except where those depart from RFC 5545 3.3.10 and the RFC is
// clear; there the RFC wins:
//
//   - BYSETPOS picks among the occurrences of the whole period, and only
//     then are those before DTSTART dropped. For WEEKLY the period is the
//     week starting on WKST: DTSTART:20240102T120000 (a Tuesday) with
//     FREQ=WEEKLY;BYDAY=MO,TU,SU,SA,TH;BYSETPOS=3,2 starts on 2 January
//     (the 2nd and 3rd of Monday 1, Tuesday 2, Thursday 4, ...), where
//     dateutil and rrule-go count from DTSTART's day and start on the 4th.
//     The same holds for the first period of every FREQ (dateutil already
//     agrees for the others).
//   - With a DATE DTSTART, BYHOUR, BYMINUTE and BYSECOND are ignored
//     (dateutil and rrule-go apply them).
//
// DTSTART anchors the rule but is an occurrence only when the rule
// produces it, as in dateutil (add it as an RDATE otherwise). Repeated
// values (BYHOUR=6,6) count once, as in dateutil. Where RFC 5545 leaves a
// question open, dateutil's answer is taken: BYWEEKNO without BYDAY takes
// every day of the numbered weeks (libical takes DTSTART's weekday),
// FREQ=YEARLY with BYMONTHDAY but no BYMONTH takes every month (libical
// takes DTSTART's month), and INTERVAL counts calendar years even with
// BYWEEKNO (libical counts ISO week-numbering years).
//
// Parse refuses what RFC 5545 3.3.10 forbids (COUNT with UNTIL, BYWEEKNO
// without FREQ=YEARLY, BYSETPOS alone, a date-only UNTIL after a DTSTART
// with a time, ...), BYDAY mixing entries with and without a position
// (which dateutil and rrule-go turn into an intersection that never
// matches), COUNT and INTERVAL above 1,000,000, and a rule that has no
// occurrence at all (ErrNoOccurrence).
//
// # Daylight saving time
//
// Rules are expanded in wall-clock time, then each local time is placed on
// the time line as RFC 5545 (3.3.5 and 3.3.10) says:
//
//   - A local time that does not exist, because the clocks jump forward
//     over it, is taken with the UTC offset in force before the jump: 02:30
//     on the spring-forward day in Europe/Paris (clocks go from 02:00 to
//     03:00) runs at 03:30 local time, 01:30 UTC.
//   - A local time that occurs twice, because the clocks fall back, runs
//     once, at its first occurrence: 02:30 on the autumn day in
//     Europe/Paris runs at 02:30 CEST, 00:30 UTC.
//
// This is Python's fold=0. Go's time.Date, which rrule-go uses, leaves both
// cases unspecified and in practice picks differently from one zone to
// another (in Europe/Paris it runs the repeated 02:30 the second time; in
// America/New_York it runs the missing 02:30 at 01:30).
//
// Since rules count in wall-clock time, FREQ=HOURLY on the spring day has
// the wall hours 02:00 and 03:00 at one instant (it runs once), and on the
// autumn day runs the repeated hour once.
//
// # Speed
//
// Next and First do not walk from DTSTART: they jump to the period of
// FREQ×INTERVAL (counted in wall time from DTSTART's period) that holds
// the given time and expand from there, so their cost (about a
// microsecond, without allocation) does not grow with DTSTART's age.
// Rules with COUNT are walked once when parsed and resume from a
// checkpoint near the given time. Parse checks that each rule occurs,
// which takes at most one 400-year calendar cycle of periods, and keeps
// recently parsed schedules, keyed by text, zone and (for a rule without
// DTSTART) the anchor day, so the many models sharing a rule share one
// Schedule.
package rrule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options tells Parse how to read a schedule that does not say everything.
type Options struct {
	// Timezone names the zone (IANA) of a bare RRULE body or a floating
	// DTSTART; "" means UTC.
	Timezone string
	// Created anchors a rule without DTSTART: DTSTART is 00:00:00 of
	// Created's day in Timezone.
	Created time.Time
}

// Schedule is a parsed recurrence. It is immutable and safe for concurrent
// use.
type Schedule struct {
	loc     *time.Location
	rules   []*rule
	rdates  []int64 // sorted, unique instants (Unix seconds)
	exdates []int64 // sorted, unique instants
}

// Parse parses text: RFC 5545 lines (DTSTART, RRULE, RDATE, EXDATE) or a
// bare RRULE body (see the package documentation). Errors say what is
// wrong and where, e.g. "BYHOUR=25: must be between 0 and 23". Parse
// returns the same *Schedule for the same text, zone and anchor while it is
// cached.
func Parse(text string, opt Options) (*Schedule, error) {
	loc, err := loadLocation(opt.Timezone)
	if err != nil {
		return nil, err
	}
	key := cacheKey{text: text, zone: opt.Timezone}
	if !mentionsDTSTART(text) {
		// The anchor matters only without DTSTART.
		y, m, d := opt.Created.In(loc).Date()
		key.day, key.anchored = daysFromCivil(y, int(m), d), true
	}
	if e, ok := schedules.get(key); ok {
		return e.s, e.err
	}
	s, usedAnchor, err := parse(text, loc, key.day)
	if usedAnchor == key.anchored {
		schedules.put(key, cacheEntry{s, err})
	}
	return s, err
}

// mentionsDTSTART reports whether text contains "DTSTART" in any case.
func mentionsDTSTART(text string) bool {
	const word = "dtstart"
	for i := 0; i+len(word) <= len(text); i++ {
		if text[i]|0x20 == 'd' && strings.EqualFold(text[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// parse parses text with loc as the default zone and anchorDay as the day
// of a missing DTSTART; usedAnchor reports whether it was needed.
func parse(text string, loc *time.Location, anchorDay int64) (s *Schedule, usedAnchor bool, err error) {
	lines, numbers := splitLines(text)
	if len(lines) == 0 {
		return nil, false, fmt.Errorf("schedule is empty")
	}
	if len(lines) == 1 && isBareRule(lines[0]) {
		lines[0] = "RRULE:" + lines[0]
	}
	var dtstart *property
	var rrules, dates []property
	for i, l := range lines {
		if isBareRule(l) {
			return nil, false, fmt.Errorf("line %d: %q: a bare rule must be alone; write RRULE:%s", numbers[i], cut(l), cut(l))
		}
		p, err := parseProperty(l, numbers[i])
		if err != nil {
			return nil, false, err
		}
		switch p.name {
		case "DTSTART":
			if dtstart != nil {
				return nil, false, fmt.Errorf("DTSTART: given more than once (lines %d and %d)", dtstart.line, p.line)
			}
			dtstart = &p
		case "RRULE":
			rrules = append(rrules, p)
		case "RDATE", "EXDATE":
			dates = append(dates, p)
		default:
			return nil, false, fmt.Errorf("line %d: %s: unsupported property (want DTSTART, RRULE, RDATE or EXDATE)", p.line, p.name)
		}
	}
	hasRDate := slices.ContainsFunc(dates, func(p property) bool { return p.name == "RDATE" })
	if len(rrules) == 0 && !hasRDate {
		return nil, false, fmt.Errorf("schedule has no RRULE or RDATE")
	}

	s = &Schedule{loc: loc}
	start := anchorDay * secondsPerDay
	dateOnly := false
	if dtstart != nil {
		zone, tzid, err := zoneParams(*dtstart, loc)
		if err != nil {
			return nil, false, err
		}
		dt, err := parseDateTime(dtstart.value)
		if err != nil {
			return nil, false, fmt.Errorf("DTSTART: %w", err)
		}
		switch {
		case dt.utc && tzid:
			return nil, false, fmt.Errorf("DTSTART: %q: a value with TZID must not end in Z", dtstart.value)
		case dt.utc:
			zone = time.UTC
		}
		s.loc, start, dateOnly = zone, dt.wall, dt.dateOnly
	} else {
		usedAnchor = true
	}

	for _, p := range rrules {
		if len(p.params) > 0 {
			return nil, usedAnchor, fmt.Errorf("RRULE: unsupported parameter %s", p.params[0].name)
		}
		r, err := parseRule(p.value, start, s.loc, dateOnly)
		if err != nil {
			if len(rrules) > 1 {
				err = fmt.Errorf("RRULE on line %d: %w", p.line, err)
			}
			return nil, usedAnchor, err
		}
		s.rules = append(s.rules, r)
	}
	for _, p := range dates {
		list, err := parseDates(p, s.loc)
		if err != nil {
			return nil, usedAnchor, err
		}
		if p.name == "RDATE" {
			s.rdates = append(s.rdates, list...)
		} else {
			s.exdates = append(s.exdates, list...)
		}
	}
	slices.Sort(s.rdates)
	s.rdates = slices.Compact(s.rdates)
	slices.Sort(s.exdates)
	s.exdates = slices.Compact(s.exdates)
	if _, ok := s.next(minInstant); !ok {
		return nil, usedAnchor, fmt.Errorf("%w: EXDATE removes every occurrence", ErrNoOccurrence)
	}
	return s, usedAnchor, nil
}

// minInstant precedes every occurrence: years start at 1.
var minInstant = daysFromCivil(1, 1, 1)*secondsPerDay - 2*secondsPerDay

func parseRule(value string, start int64, loc *time.Location, dateOnly bool) (*rule, error) {
	rc, err := parseRecur(value)
	if err != nil {
		return nil, err
	}
	return newRule(rc, start, loc, dateOnly)
}

// Location returns the schedule's zone: DTSTART's, or Options.Timezone.
// Next and First return times in it.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first occurrence strictly after t, and false if there
// is none (the rule has ended).
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	return s.toTime(s.next(t.Unix()))
}

// First returns the first occurrence at or after t, and false if there is
// none.
func (s *Schedule) First(t time.Time) (time.Time, bool) {
	// Occurrences fall on whole seconds, so "at or after t" is "after the
	// last whole second before t".
	return s.toTime(s.next(t.Add(-1).Unix()))
}

func (s *Schedule) toTime(u int64, ok bool) (time.Time, bool) {
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(u, 0).In(s.loc), true
}

// next returns the first occurrence strictly after the instant t (Unix
// seconds).
func (s *Schedule) next(t int64) (int64, bool) {
	for {
		best, found := int64(0), false
		for _, r := range s.rules {
			if u, ok := r.next(t); ok && (!found || u < best) {
				best, found = u, true
			}
		}
		if i, _ := slices.BinarySearch(s.rdates, t+1); i < len(s.rdates) && (!found || s.rdates[i] < best) {
			best, found = s.rdates[i], true
		}
		if !found {
			return 0, false
		}
		if _, excluded := slices.BinarySearch(s.exdates, best); !excluded {
			return best, true
		}
		t = best
	}
}
