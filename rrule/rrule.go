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
// matches), INTERVAL above 1,000,000, a schedule beyond its Limits
// (*LimitError), and a rule that has no occurrence at all
// (ErrNoOccurrence). It answers for any time: whether a schedule still
// occurs after some instant (an UNTIL in the past) is for the caller to
// ask, with First.
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
// # Cost
//
// Next and First do not walk from DTSTART: they jump to the period of
// FREQ×INTERVAL (counted in wall time from DTSTART's period) that holds
// the given time and look at the periods from there, so their cost (about
// a microsecond, without allocation) does not grow with DTSTART's age.
// Which days of a month or year pass a rule's filters depends only on the
// month's or year's shape (which month, leap year or not, weekday of the
// 1st), so each rule tabulates them once and looks at a period with a
// table lookup; days that do not pass are crossed month by month. A COUNT
// rule is counted once, at Parse, to its last occurrence, and then
// searched like a rule with UNTIL. Each EXDATE that removes an occurrence records,
// at Parse, the first occurrence after it that stays, so that a run of
// removed occurrences costs Next nothing.
//
// Every schedule is bounded (see Limits): its text, rules, RDATE and
// EXDATE values and COUNT, the work to find one occurrence, and the work
// of Parse itself. Parse computes the work of a search from the rules'
// structure over the calendar's 400-year cycle (the longest stretch
// without occurrence a search may have to cross) and refuses a schedule
// whose search may take more than Limits.MaxSteps, so that Next and First
// of an accepted schedule always answer within the bound: well under a
// millisecond with the default limits. Parse counts its own work (reading
// the text, building the tables, that check, the COUNT walk, the EXDATEs)
// against Limits.MaxParseSteps and stops, refusing the schedule, as soon
// as it would pass it: about a millisecond at most with the default
// limits, accepted or not, so that a first Next (Parse, then Next) costs
// about a millisecond at most for any schedule. Rules of a schedule with
// the same day filter, or the same times and INTERVAL, share their tables,
// and a filter of weekdays only (BYDAY without positions) takes a table
// shared by every schedule; a COUNT rule whose periods are all alike, or a
// DAILY one with a day filter, is counted without walking each period.
//
// Parse keeps recently parsed schedules, keyed by text, zone, limits and
// (for a schedule without DTSTART) the anchor day, so the many models
// sharing a schedule share one Schedule. The cache is bounded by the
// memory its schedules hold (32 MB: a common schedule holds about 1.3 KB,
// so that some 12,000 of them stay cached, and the largest an
// accepted schedule may hold is some 400 KB of tables plus what grows with
// its text), and a refused text is not kept.
//
// # Schedules without DTSTART
//
// A schedule without DTSTART is anchored at 00:00 of Options.Created's
// day, and whether it is valid can depend on that day (an UNTIL before it,
// an INTERVAL that never reaches a BYDAY from it). Validate it with the
// creation time the model will keep: a later Parse with the same text,
// zone and day is answered from the cache without parsing again. When the
// creation time is not known yet, Parse with any Created and, once it is,
// call Reanchor on the result: it reuses what Parse read from the text and
// checks only what depends on the anchor. Anchored reports whether a
// schedule needs this at all.
package rrule

import (
	"fmt"
	"math"
	"math/bits"
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
	// Limits bound what the schedule may cost; zero fields take the
	// defaults of DefaultLimits.
	Limits Limits
}

// Schedule is a parsed recurrence. It is immutable and safe for concurrent
// use.
type Schedule struct {
	loc     *time.Location
	rules   []*rule
	rdates  []int64 // sorted, unique instants (Unix seconds)
	exdates []int64 // sorted, unique instants
	// after[i] is, when exdates[i] is an occurrence of the rules or
	// RDATEs, the first occurrence after it that no EXDATE removes
	// (noneAfter if there is none); notOccurrence otherwise.
	after []int64
	bound int // steps one Next or First may take
	size  int // bytes held, estimated

	parseSteps int // the work of Parse, in steps (see Limits.MaxParseSteps)

	src       *source // what Parse read, for Reanchor (nil with DTSTART)
	anchorDay int64
	key       cacheKey
}

const (
	notOccurrence = math.MinInt64
	noneAfter     = math.MaxInt64
)

// minInstant precedes every occurrence: years start at 1.
var minInstant = daysFromCivil(1, 1, 1)*secondsPerDay - 2*secondsPerDay

// Parse parses text: RFC 5545 lines (DTSTART, RRULE, RDATE, EXDATE) or a
// bare RRULE body (see the package documentation). Errors say what is
// wrong and where, e.g. "BYHOUR=25: must be between 0 and 23"; a schedule
// beyond opt.Limits gets a *LimitError. Parse returns the same *Schedule
// for the same text, zone, limits and anchor while it is cached.
func Parse(text string, opt Options) (*Schedule, error) {
	lim := opt.Limits.orDefault()
	if len(text) > lim.MaxBytes {
		return nil, limitErrorf("MaxBytes", "schedule: at most %d bytes, got %d", lim.MaxBytes, len(text))
	}
	loc, err := loadLocation(opt.Timezone)
	if err != nil {
		return nil, err
	}
	key := cacheKey{text: text, zone: opt.Timezone, limits: lim}
	if !mentionsDTSTART(text) {
		// The anchor matters only without DTSTART.
		key.day, key.anchored = dayOf(opt.Created, loc), true
	}
	if s, ok := schedules.get(key); ok {
		return s, nil
	}
	src, err := read(text, loc, &lim)
	if err != nil {
		return nil, err
	}
	if key.anchored = !src.hasStart; key.anchored {
		key.day = dayOf(opt.Created, loc)
	} else {
		key.day = 0
	}
	s, err := src.build(key.day, &lim)
	if err != nil {
		return nil, err
	}
	s.key = key
	schedules.put(key, s)
	return s, nil
}

// dayOf returns the day of t in loc.
func dayOf(t time.Time, loc *time.Location) int64 {
	y, m, d := t.In(loc).Date()
	return daysFromCivil(y, int(m), d)
}

// Anchored reports whether the schedule has no DTSTART, so that
// Options.Created anchors it and Reanchor may give another schedule.
func (s *Schedule) Anchored() bool { return s.src != nil }

// Reanchor returns the schedule anchored at 00:00 of created's day in its
// zone, as Parse would with Options.Created = created: s itself when it has
// a DTSTART or the same anchor day, else a schedule built from what Parse
// read, without reading the text again. The result is cached like Parse's,
// so that a later Parse with that anchor finds it. It fails, like Parse,
// when the rules have no occurrence or cost too much from that anchor.
func (s *Schedule) Reanchor(created time.Time) (*Schedule, error) {
	if s.src == nil {
		return s, nil
	}
	day := dayOf(created, s.loc)
	if day == s.anchorDay {
		return s, nil
	}
	key := s.key
	key.day = day
	if c, ok := schedules.get(key); ok {
		return c, nil
	}
	lim := key.limits
	c, err := s.src.build(day, &lim)
	if err != nil {
		return nil, err
	}
	c.key = key
	schedules.put(key, c)
	return c, nil
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

// source is what Parse reads from a schedule's text.
type source struct {
	loc       *time.Location // DTSTART's zone, or the default one
	textBytes int
	hasStart  bool
	start     int64 // DTSTART, wall time
	dateOnly  bool
	rules     []ruleSource
	rdates    []int64 // sorted, unique
	exdates   []int64 // sorted, unique
}

type ruleSource struct {
	line int
	rc   *recur
}

// read parses text with loc as the default zone.
func read(text string, loc *time.Location, lim *Limits) (*source, error) {
	lines, numbers := splitLines(text)
	if len(lines) == 0 {
		return nil, fmt.Errorf("schedule is empty")
	}
	if len(lines) == 1 && isBareRule(lines[0]) {
		lines[0] = "RRULE:" + lines[0]
	}
	var dtstart *property
	var rrules, dates []property
	nRules, nRDates, nExDates := 0, 0, 0
	for i, l := range lines {
		if isBareRule(l) {
			return nil, fmt.Errorf("line %d: %q: a bare rule must be alone; write RRULE:%s", numbers[i], cut(l), cut(l))
		}
		p, err := parseProperty(l, numbers[i])
		if err != nil {
			return nil, err
		}
		switch p.name {
		case "DTSTART":
			if dtstart != nil {
				return nil, fmt.Errorf("DTSTART: given more than once (lines %d and %d)", dtstart.line, p.line)
			}
			dtstart = &p
		case "RRULE":
			rrules = append(rrules, p)
			nRules++
		case "RDATE":
			dates = append(dates, p)
			nRDates += strings.Count(p.value, ",") + 1
		case "EXDATE":
			dates = append(dates, p)
			nExDates += strings.Count(p.value, ",") + 1
		default:
			return nil, fmt.Errorf("line %d: %s: unsupported property (want DTSTART, RRULE, RDATE or EXDATE)", p.line, cut(p.name))
		}
	}
	switch {
	case nRules > lim.MaxRules:
		return nil, limitErrorf("MaxRules", "RRULE: at most %d rules per schedule, got %d", lim.MaxRules, nRules)
	case nRDates > lim.MaxRDates:
		return nil, limitErrorf("MaxRDates", "RDATE: at most %d values per schedule, got %d", lim.MaxRDates, nRDates)
	case nExDates > lim.MaxExDates:
		return nil, limitErrorf("MaxExDates", "EXDATE: at most %d values per schedule, got %d", lim.MaxExDates, nExDates)
	case nRules == 0 && nRDates == 0:
		return nil, fmt.Errorf("schedule has no RRULE or RDATE")
	}

	src := &source{loc: loc, textBytes: len(text)}
	if dtstart != nil {
		zone, tzid, err := zoneParams(*dtstart, loc)
		if err != nil {
			return nil, err
		}
		dt, err := parseDateTime(dtstart.value)
		if err != nil {
			return nil, fmt.Errorf("DTSTART: %w", err)
		}
		switch {
		case dt.utc && tzid:
			return nil, fmt.Errorf("DTSTART: %q: a value with TZID must not end in Z", dtstart.value)
		case dt.utc:
			zone = time.UTC
		}
		src.loc, src.hasStart, src.start, src.dateOnly = zone, true, dt.wall, dt.dateOnly
	}

	counted := 0
	for _, p := range rrules {
		rc, err := readRule(p, lim.MaxCount)
		if err == nil && rc.count > 0 {
			if counted += rc.count; counted > lim.MaxCount {
				err = limitErrorf("MaxCount", "COUNT=%d: at most %d occurrences counted per schedule, over all its rules, got %d",
					rc.count, lim.MaxCount, counted)
			}
		}
		if err != nil {
			if len(rrules) > 1 {
				err = ruleError{p.line, err}
			}
			return nil, err
		}
		src.rules = append(src.rules, ruleSource{p.line, rc})
	}
	for _, p := range dates {
		list, err := parseDates(p, src.loc)
		if err != nil {
			return nil, err
		}
		if p.name == "RDATE" {
			src.rdates = append(src.rdates, list...)
		} else {
			src.exdates = append(src.exdates, list...)
		}
	}
	slices.Sort(src.rdates)
	src.rdates = slices.Compact(src.rdates)
	slices.Sort(src.exdates)
	src.exdates = slices.Compact(src.exdates)
	return src, nil
}

func readRule(p property, maxCount int) (*recur, error) {
	if len(p.params) > 0 {
		return nil, fmt.Errorf("RRULE: unsupported parameter %s", cut(p.params[0].name))
	}
	return parseRecur(p.value, maxCount)
}

// ruleError is an error of one RRULE among several.
type ruleError struct {
	line int
	err  error
}

func (e ruleError) Error() string { return fmt.Sprintf("RRULE on line %d: %v", e.line, e.err) }
func (e ruleError) Unwrap() error { return e.err }

// Parse steps of reading a schedule's text (see work).
const (
	textBytesPerStep = 2
	stepsRuleText    = 80 // per RRULE line
)

// build returns the schedule of src, anchored, without DTSTART, at
// anchorDay.
func (src *source) build(anchorDay int64, lim *Limits) (*Schedule, error) {
	s := &Schedule{loc: src.loc, rdates: src.rdates, exdates: src.exdates}
	s.size = 256 + 8*(len(s.rdates)+2*len(s.exdates))
	start := src.start
	if !src.hasStart {
		s.src, s.anchorDay, start = src, anchorDay, anchorDay*secondsPerDay
		s.size += 512 * len(src.rules) // the rules as read, kept for Reanchor
	}
	w := newWork(lim)
	defer w.release()
	w.multi = len(src.rules) > 1
	if !w.spend(src.textBytes/textBytesPerStep + stepsRuleText*len(src.rules)) {
		return nil, w.exceeded(fmt.Sprintf("schedule: reading %d bytes", src.textBytes), "shorten it")
	}
	s.bound = stepsZone + 2*(bits.Len(uint(len(s.rdates)))+bits.Len(uint(len(s.exdates))))
	for _, rs := range src.rules {
		r, err := newRule(rs.rc, start, src.loc, src.dateOnly, w)
		if err == nil {
			err = r.analyze(w)
		}
		if err == nil && r.bound <= lim.MaxSteps {
			// (Beyond MaxSteps, the schedule is refused below.)
			err = r.occurs(w)
		}
		if err != nil {
			if len(src.rules) > 1 {
				err = ruleError{rs.line, err}
			}
			return nil, err
		}
		s.rules = append(s.rules, r)
		s.bound += r.bound
		s.size += r.size()
	}
	if s.bound > lim.MaxSteps {
		return nil, s.boundError(lim)
	}
	if err := s.buildAfter(w); err != nil {
		return nil, err
	}
	_, ok, steps := s.nextSteps(minInstant)
	if !w.spend(steps) {
		return nil, w.exceeded("schedule: finding its first occurrence", "use fewer or simpler rules")
	}
	if !ok {
		return nil, fmt.Errorf("%w: EXDATE removes every occurrence", ErrNoOccurrence)
	}
	s.size += w.bytes
	s.parseSteps = w.used
	return s, nil
}

// boundError explains a schedule whose search may exceed lim.MaxSteps.
func (s *Schedule) boundError(lim *Limits) error {
	if len(s.rules) == 1 {
		return limitErrorf("MaxSteps", "RRULE: finding an occurrence may take up to %d steps, more than the limit of %d",
			s.bound, lim.MaxSteps)
	}
	costliest := s.rules[0]
	for _, r := range s.rules {
		if r.bound > costliest.bound {
			costliest = r
		}
	}
	return limitErrorf("MaxSteps", "RRULE: finding an occurrence across the %d rules may take up to %d steps, more than the limit of %d (the costliest rule, FREQ=%v;INTERVAL=%d, up to %d)",
		len(s.rules), s.bound, lim.MaxSteps, costliest.freq, costliest.interval, costliest.bound)
}

// occurs returns ErrNoOccurrence if the rule has no occurrence, charging
// w for the search.
func (r *rule) occurs(w *work) error {
	z := newZone(r.loc, floorDiv(r.start, secondsPerDay)*secondsPerDay-2*secondsPerDay)
	steps := stepsZone
	_, ok := r.next(&z, &steps)
	if !w.spend(steps) {
		return w.ruleExceeded("finding the first occurrence of")
	}
	if !ok {
		return ErrNoOccurrence
	}
	return nil
}

// buildAfter computes s.after: for each EXDATE that removes an occurrence,
// the first occurrence after it that stays, so that Next never looks at
// more than one EXDATE.
func (s *Schedule) buildAfter(w *work) error {
	if len(s.exdates) == 0 {
		return nil
	}
	memo := make([]memoNext, len(s.rules))
	ser := series{parsed: true}
	steps := 0
	next := make([]int64, len(s.exdates))
	s.after = make([]int64, len(s.exdates))
	for i, e := range s.exdates {
		s.after[i] = notOccurrence
		// e is an occurrence if the first one after e-1 is e.
		if x, ok := s.rawNext(e-1, memo, &ser, &steps); ok && x == e {
			next[i] = noneAfter
			if x, ok := s.rawNext(e, memo, &ser, &steps); ok {
				next[i] = x
			}
		}
		if w.used+steps > w.max {
			return w.exceeded(fmt.Sprintf("EXDATE: checking %d values against %d rules", len(s.exdates), len(s.rules)),
				"use fewer values or rules")
		}
	}
	w.spend(steps)
	for i := len(s.exdates) - 1; i >= 0; i-- {
		if next[i] == 0 {
			continue
		}
		s.after[i] = next[i]
		if j, ok := slices.BinarySearch(s.exdates, next[i]); ok {
			s.after[i] = s.after[j]
		}
	}
	return nil
}

// memoNext remembers a rule's answer to an earlier question, which stays
// right for any later time before it.
type memoNext struct {
	asked, next int64
	ok, valid   bool
}

// series is what a series of questions to rawNext, about times that do
// not decrease, share: the zone of the last one, for the next to reuse,
// and how to count their steps.
type series struct {
	z      zone
	zoned  bool
	parsed bool // count steps as Parse accounts for its work (see fixedPerStep), not as a search bounds them
}

// A search counts, besides the periods it looks at, fixed amounts for
// loading a period, placing an entry in it and resolving a wall time:
// bounds, which take in fact about an eighth as much. Parse counts that
// for checking EXDATEs, where it searches once or twice per value, with
// stepsSearchCall for the call.
const (
	fixedPerStep    = 8
	stepsSearchCall = 2
)

// rawNext returns the first occurrence of the rules or RDATEs after t,
// EXDATE aside, reusing the answers in memo and the zone of ser (times
// asked must not decrease).
func (s *Schedule) rawNext(t int64, memo []memoNext, ser *series, steps *int) (int64, bool) {
	zoned := false
	best, found := int64(0), false
	for i, r := range s.rules {
		m := &memo[i]
		if !m.valid || m.asked > t || m.ok && m.next <= t {
			if !zoned {
				reused := false
				if ser.zoned {
					ser.z, reused = ser.z.moveTo(s.loc, t)
				} else {
					ser.z, ser.zoned = newZone(s.loc, t), true
				}
				if !reused {
					*steps += stepsZone
				}
				zoned = true
			}
			var fixed int
			m.next, m.ok, fixed = r.search(&ser.z, steps)
			m.asked, m.valid = t, true
			if ser.parsed {
				// Count what the search does, not what its bound allows.
				*steps -= fixed - fixed/fixedPerStep - stepsSearchCall
			}
		}
		if m.ok && (!found || m.next < best) {
			best, found = m.next, true
		}
	}
	if i, _ := slices.BinarySearch(s.rdates, t+1); i < len(s.rdates) && (!found || s.rdates[i] < best) {
		best, found = s.rdates[i], true
	}
	return best, found
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
	x, ok, _ := s.nextSteps(t)
	return x, ok
}

// nextSteps is next, also returning the steps it took.
func (s *Schedule) nextSteps(t int64) (int64, bool, int) {
	z := newZone(s.loc, t)
	steps := stepsZone
	best, found := int64(0), false
	for _, r := range s.rules {
		if x, ok := r.next(&z, &steps); ok && (!found || x < best) {
			best, found = x, true
		}
	}
	if i, _ := slices.BinarySearch(s.rdates, t+1); i < len(s.rdates) && (!found || s.rdates[i] < best) {
		best, found = s.rdates[i], true
	}
	if found {
		if i, excluded := slices.BinarySearch(s.exdates, best); excluded {
			best = s.after[i]
			found = best != noneAfter
		}
	}
	return best, found, steps
}

// MinGap returns the smallest distance between consecutive occurrences
// among the first n occurrences after the time after, and false if fewer
// than two occur. The minimum schedule interval (docs/policy.md) is MinGap(now,
// 1000). It finds the occurrences as Next does, but searches again only
// the rule whose occurrence it has just used, so it takes about n searches
// of one rule rather than n of the whole schedule: at most n times
// Limits.MaxSteps steps, well under a millisecond for n = 1000 on common
// schedules and a few milliseconds on the costliest accepted ones.
func (s *Schedule) MinGap(after time.Time, n int) (time.Duration, bool) {
	memo := make([]memoNext, len(s.rules))
	var ser series
	steps := 0
	next := func(t int64) (int64, bool) {
		x, ok := s.rawNext(t, memo, &ser, &steps)
		if ok {
			if i, excluded := slices.BinarySearch(s.exdates, x); excluded {
				x = s.after[i]
				ok = x != noneAfter
			}
		}
		return x, ok
	}
	prev, ok := next(after.Unix())
	if !ok {
		return 0, false
	}
	gap, seen := int64(math.MaxInt64), 0
	for range n - 1 {
		x, ok := next(prev)
		if !ok {
			break
		}
		gap, prev, seen = min(gap, x-prev), x, seen+1
	}
	if seen == 0 {
		return 0, false
	}
	return time.Duration(gap) * time.Second, true
}
