package rrule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoOccurrence is returned (wrapped) by Parse for a schedule, or one of
// its rules, that never occurs.
var ErrNoOccurrence = errors.New("rule has no occurrence")

// maxInterval bounds INTERVAL.
const maxInterval = 1_000_000

// property is one content line: NAME;PARAM=VALUE:VALUE.
type property struct {
	line   int
	name   string
	params []param
	value  string
}

type param struct{ name, value string }

// knownProperties start a new line even when indented; other indented
// lines continue the previous one (RFC 5545 3.1 folding).
var knownProperties = []string{"DTSTART", "RRULE", "RDATE", "EXDATE", "EXRULE", "DTEND", "DURATION"}

func startsProperty(s string) bool {
	for _, p := range knownProperties {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) && (s[len(p)] == ':' || s[len(p)] == ';') {
			return true
		}
	}
	return false
}

// isBareRule reports whether s is a bare RRULE body (FREQ=...), whose
// first name is followed by '=' rather than ':' or ';'.
func isBareRule(s string) bool {
	i := strings.IndexAny(s, ";:=")
	return i > 0 && s[i] == '='
}

// splitLines unfolds text into numbered, trimmed, non-empty lines.
func splitLines(text string) (lines []string, numbers []int) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var folded []string // pieces of the last line, when folded
	flush := func() {
		if len(folded) > 1 {
			lines[len(lines)-1] = strings.Join(folded, "")
		}
		folded = folded[:0]
	}
	for i, raw := range strings.Split(text, "\n") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		if (raw[0] == ' ' || raw[0] == '\t') && len(lines) > 0 && !startsProperty(s) {
			folded = append(folded, s)
			continue
		}
		flush()
		lines = append(lines, s)
		numbers = append(numbers, i+1)
		folded = append(folded, s)
	}
	flush()
	return lines, numbers
}

// parseProperty splits a content line into name, parameters and value.
func parseProperty(s string, no int) (property, error) {
	p := property{line: no}
	i := strings.IndexAny(s, ";:")
	if i <= 0 {
		return p, fmt.Errorf("line %d: %q: want NAME:VALUE, e.g. RRULE:FREQ=DAILY", no, cut(s))
	}
	p.name = strings.ToUpper(s[:i])
	rest := s[i:]
	for rest != "" && rest[0] == ';' {
		rest = rest[1:]
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return p, fmt.Errorf("%s: parameter %q: want NAME=VALUE", p.name, cut(rest))
		}
		pr := param{name: strings.ToUpper(rest[:eq])}
		rest = rest[eq+1:]
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return p, fmt.Errorf("%s: parameter %s: missing closing quote", cut(p.name), cut(pr.name))
			}
			pr.value, rest = rest[1:end+1], rest[end+2:]
		} else {
			j := strings.IndexAny(rest, ";:")
			if j < 0 {
				j = len(rest)
			}
			pr.value, rest = rest[:j], rest[j:]
		}
		p.params = append(p.params, pr)
	}
	if rest == "" || rest[0] != ':' {
		return p, fmt.Errorf("%s: missing ':' before the value", cut(p.name))
	}
	p.value = strings.TrimSpace(rest[1:])
	if p.value == "" {
		return p, fmt.Errorf("%s: empty value", cut(p.name))
	}
	return p, nil
}

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// dateTime is a DATE or DATE-TIME value.
type dateTime struct {
	wall     int64
	utc      bool // ends in Z
	dateOnly bool // YYYYMMDD
}

func parseDateTime(v string) (dateTime, error) {
	orig := v
	bad := func() error {
		return fmt.Errorf("%q: want a date-time YYYYMMDDTHHMMSS, with Z for UTC, or a date YYYYMMDD", cut(orig))
	}
	var dt dateTime
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		dt.utc, v = true, v[:len(v)-1]
	}
	switch {
	case len(v) == 8 && !dt.utc:
		dt.dateOnly = true
	case len(v) == 15 && (v[8] == 'T' || v[8] == 't'):
	default:
		return dt, bad()
	}
	num := func(s string) int {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, m, d := num(v[0:4]), num(v[4:6]), num(v[6:8])
	hh, mm, ss := 0, 0, 0
	if !dt.dateOnly {
		hh, mm, ss = num(v[9:11]), num(v[11:13]), num(v[13:15])
	}
	if y < 0 || m < 0 || d < 0 || hh < 0 || mm < 0 || ss < 0 {
		return dt, bad()
	}
	if y < 1 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) || hh > 23 || mm > 59 || ss > 59 {
		return dt, fmt.Errorf("%q: no such date or time", cut(v))
	}
	dt.wall = wallOf(y, m, d, hh, mm, ss)
	return dt, nil
}

// zoneParams reads the TZID and VALUE parameters of a date property.
func zoneParams(p property, def *time.Location) (*time.Location, bool, error) {
	loc, tzid := def, false
	for _, pr := range p.params {
		switch pr.name {
		case "TZID":
			l, err := loadLocation(pr.value)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", p.name, err)
			}
			loc, tzid = l, true
		case "VALUE":
			if v := strings.ToUpper(pr.value); v != "DATE-TIME" && v != "DATE" {
				return nil, false, fmt.Errorf("%s: VALUE=%s is not supported (want DATE-TIME or DATE)", p.name, cut(pr.value))
			}
		default:
			return nil, false, fmt.Errorf("%s: unsupported parameter %s", p.name, cut(pr.name))
		}
	}
	return loc, tzid, nil
}

// instantOf returns the instant of a date value read in loc.
func instantOf(dt dateTime, loc *time.Location) int64 {
	if dt.utc {
		return dt.wall
	}
	return resolve(loc, dt.wall).unix
}

// parseDates parses an RDATE or EXDATE line into instants.
func parseDates(p property, def *time.Location) ([]int64, error) {
	loc, tzid, err := zoneParams(p, def)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, v := range strings.Split(p.value, ",") {
		dt, err := parseDateTime(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if dt.utc && tzid {
			return nil, fmt.Errorf("%s: %q: a value with TZID must not end in Z", p.name, v)
		}
		out = append(out, instantOf(dt, loc))
	}
	return out, nil
}

// recur is a parsed RRULE value (RFC 5545 3.3.10).
type recur struct {
	freq       frequency
	interval   int
	count      int
	until      string
	wkst       int
	bySecond   []int
	byMinute   []int
	byHour     []int
	byDay      []nthWeekday
	byMonthDay []int
	byYearDay  []int
	byWeekNo   []int
	byMonth    []int
	bySetPos   []int
	seen       parts // the parts as written
}

// The rule parts, in the order of partNames.
const (
	partFreq = iota
	partInterval
	partCount
	partUntil
	partWkst
	partByDay
	partBySecond
	partByMinute
	partByHour
	partByMonthDay
	partByYearDay
	partByWeekNo
	partByMonth
	partBySetPos
	numParts
)

var partNames = [numParts]string{"FREQ", "INTERVAL", "COUNT", "UNTIL", "WKST", "BYDAY",
	"BYSECOND", "BYMINUTE", "BYHOUR", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYMONTH", "BYSETPOS"}

// parts holds the value of each part of a rule as written, "" when absent
// (an empty value is refused).
type parts [numParts]string

// get returns the value of the part named name.
func (p *parts) get(name string) (string, bool) {
	i := slices.Index(partNames[:], name)
	if i < 0 || p[i] == "" {
		return "", false
	}
	return p[i], true
}

var weekdayNames = []string{"MO", "TU", "WE", "TH", "FR", "SA", "SU"}

func parseWeekday(s string) (int, bool) {
	i := slices.Index(weekdayNames, s)
	return i, i >= 0
}

// intRange describes the values a numeric part accepts: lo..hi, and also
// -hi..-lo when signed.
type intRange struct {
	lo, hi int
	signed bool
}

func (r intRange) String() string {
	if r.signed {
		return fmt.Sprintf("must be between %d and %d or %d and %d", r.lo, r.hi, -r.hi, -r.lo)
	}
	return fmt.Sprintf("must be between %d and %d", r.lo, r.hi)
}

func (r intRange) ok(n int) bool {
	return n >= r.lo && n <= r.hi || r.signed && n <= -r.lo && n >= -r.hi
}

// listRanges are the values of the list parts, by part.
var listRanges = [numParts]intRange{
	partBySecond:   {0, 59, false},
	partByMinute:   {0, 59, false},
	partByHour:     {0, 23, false},
	partByMonthDay: {1, 31, true},
	partByYearDay:  {1, 366, true},
	partByWeekNo:   {1, 53, true},
	partByMonth:    {1, 12, false},
	partBySetPos:   {1, 366, true},
}

// parseRecur parses an RRULE value, with COUNT at most maxCount. Errors
// name the part and the rule, e.g. "BYHOUR=25: must be between 0 and 23".
func parseRecur(value string, maxCount int) (*recur, error) {
	rc := &recur{interval: 1}
	for rest, more := value, true; more; {
		var part string
		part, rest, more = strings.Cut(rest, ";")
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(val))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME=VALUE, e.g. FREQ=DAILY", cut(part))
		}
		id := slices.Index(partNames[:], name)
		if id >= 0 && rc.seen[id] != "" {
			return nil, fmt.Errorf("%s: given more than once", cut(name))
		}
		if val == "" {
			return nil, fmt.Errorf("%s=: empty value", cut(name))
		}
		if id < 0 {
			return nil, fmt.Errorf("%s=%s: unknown rule part", cut(name), cut(val))
		}
		rc.seen[id] = val
		var err error
		switch id {
		case partFreq:
			i := slices.Index(frequencyNames[:], val)
			if i < 0 {
				return nil, fmt.Errorf("FREQ=%s: unknown frequency (want YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY, MINUTELY or SECONDLY)", cut(val))
			}
			rc.freq = frequency(i)
		case partInterval:
			rc.interval, err = parseBounded(name, val, 1, maxInterval)
		case partCount:
			rc.count, err = parseBounded(name, val, 1, maxCount)
		case partUntil:
			rc.until = val
		case partWkst:
			var ok bool
			if rc.wkst, ok = parseWeekday(val); !ok {
				return nil, fmt.Errorf("WKST=%s: unknown weekday (want MO, TU, WE, TH, FR, SA or SU)", cut(val))
			}
		case partByDay:
			rc.byDay, err = parseByDay(val)
		default:
			var list []int
			if list, err = parseList(name, val, listRanges[id]); err != nil {
				return nil, err
			}
			switch id {
			case partBySecond:
				rc.bySecond = list
			case partByMinute:
				rc.byMinute = list
			case partByHour:
				rc.byHour = list
			case partByMonthDay:
				rc.byMonthDay = list
			case partByYearDay:
				rc.byYearDay = list
			case partByWeekNo:
				rc.byWeekNo = list
			case partByMonth:
				rc.byMonth = list
			case partBySetPos:
				rc.bySetPos = list
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if rc.seen[partFreq] == "" {
		return nil, errors.New("rule has no FREQ (e.g. FREQ=DAILY)")
	}
	return rc, rc.check()
}

// parseList parses the comma-separated numbers of a list part, sorted and
// without repeats.
func parseList(name, val string, rng intRange) ([]int, error) {
	list := make([]int, 0, strings.Count(val, ",")+1)
	for rest, more := val, true; more; {
		var s string
		s, rest, more = strings.Cut(rest, ",")
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s=%s: not a number", name, cut(strings.TrimSpace(s)))
		}
		if !rng.ok(n) {
			return nil, fmt.Errorf("%s=%d: %v", name, n, rng)
		}
		list = append(list, n)
	}
	slices.Sort(list)
	return slices.Compact(list), nil
}

func parseBounded(name, val string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: not a number", name, cut(val))
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s=%d: must be between %d and %d", name, n, lo, hi)
	}
	return n, nil
}

func parseByDay(val string) ([]nthWeekday, error) {
	var out []nthWeekday
	withPos, without := false, false
	for _, s := range strings.Split(val, ",") {
		s = strings.TrimSpace(s)
		if len(s) < 2 {
			return nil, fmt.Errorf("BYDAY=%s: want a weekday like MO, 1MO or -1FR", cut(s))
		}
		wd, ok := parseWeekday(s[len(s)-2:])
		if !ok {
			return nil, fmt.Errorf("BYDAY=%s: unknown weekday (want MO, TU, WE, TH, FR, SA or SU)", cut(s))
		}
		n := 0
		if pos := s[:len(s)-2]; pos != "" {
			var err error
			if n, err = strconv.Atoi(pos); err != nil {
				return nil, fmt.Errorf("BYDAY=%s: want a weekday like MO, 1MO or -1FR", cut(s))
			}
			if n == 0 || n > 53 || n < -53 {
				return nil, fmt.Errorf("BYDAY=%s: the position must be between 1 and 53 or -53 and -1", cut(s))
			}
		}
		if n == 0 {
			without = true
		} else {
			withPos = true
		}
		x := nthWeekday{wd, n}
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	if withPos && without {
		// dateutil and rrule-go would keep only the days matching both,
		// which is never what was meant.
		return nil, fmt.Errorf("BYDAY=%s: mixing weekdays with and without a position is not supported; use BYSETPOS or several RRULE lines", cut(val))
	}
	return out, nil
}

// check applies the restrictions of RFC 5545 3.3.10 that depend on FREQ.
func (rc *recur) check() error {
	f := rc.freq
	show := func(name string) string {
		v, _ := rc.seen.get(name)
		return name + "=" + cut(v)
	}
	if rc.count > 0 && rc.until != "" {
		return errors.New("COUNT and UNTIL: only one of them may be given")
	}
	if len(rc.byWeekNo) > 0 && f != yearly {
		return fmt.Errorf("%s: only allowed with FREQ=YEARLY", show("BYWEEKNO"))
	}
	if len(rc.byYearDay) > 0 && (f == daily || f == weekly || f == monthly) {
		return fmt.Errorf("%s: not allowed with FREQ=%v", show("BYYEARDAY"), f)
	}
	if len(rc.byMonthDay) > 0 && f == weekly {
		return fmt.Errorf("%s: not allowed with FREQ=WEEKLY", show("BYMONTHDAY"))
	}
	for _, d := range rc.byDay {
		if d.n == 0 {
			continue
		}
		if f != monthly && f != yearly {
			return fmt.Errorf("%s: a position (like 1MO) is only allowed with FREQ=MONTHLY or FREQ=YEARLY", show("BYDAY"))
		}
		if len(rc.byWeekNo) > 0 {
			return fmt.Errorf("%s: a position (like 1MO) is not allowed together with BYWEEKNO", show("BYDAY"))
		}
		if f == monthly && (d.n > 5 || d.n < -5) {
			return fmt.Errorf("%s: with FREQ=MONTHLY the position must be between 1 and 5 or -5 and -1", show("BYDAY"))
		}
	}
	if len(rc.bySetPos) > 0 {
		other := false
		for id, v := range rc.seen {
			if v != "" && strings.HasPrefix(partNames[id], "BY") && id != partBySetPos {
				other = true
			}
		}
		if !other {
			return fmt.Errorf("%s: needs another BYxxx rule part to pick from", show("BYSETPOS"))
		}
	}
	return nil
}
