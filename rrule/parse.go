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

const (
	maxCount    = 1_000_000
	maxInterval = 1_000_000
)

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
	for i, raw := range strings.Split(text, "\n") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		folded := raw[0] == ' ' || raw[0] == '\t'
		if folded && len(lines) > 0 && !startsProperty(s) {
			lines[len(lines)-1] += s
			continue
		}
		lines = append(lines, s)
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

// parseProperty splits a content line into name, parameters and value.
func parseProperty(s string, no int) (property, error) {
	p := property{line: no}
	i := strings.IndexAny(s, ";:")
	if i <= 0 {
		return p, fmt.Errorf("line %d: %q: want NAME:VALUE, e.g. RRULE:FREQ=DAILY", no, s)
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
				return p, fmt.Errorf("%s: parameter %s: missing closing quote", p.name, pr.name)
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
		return p, fmt.Errorf("%s: missing ':' before the value", p.name)
	}
	p.value = strings.TrimSpace(rest[1:])
	if p.value == "" {
		return p, fmt.Errorf("%s: empty value", p.name)
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
	bad := fmt.Errorf("%q: want a date-time YYYYMMDDTHHMMSS, with Z for UTC, or a date YYYYMMDD", cut(v))
	var dt dateTime
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		dt.utc, v = true, v[:len(v)-1]
	}
	switch {
	case len(v) == 8 && !dt.utc:
		dt.dateOnly = true
	case len(v) == 15 && (v[8] == 'T' || v[8] == 't'):
	default:
		return dt, bad
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
		return dt, bad
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
				return nil, false, fmt.Errorf("%s: VALUE=%s is not supported (want DATE-TIME or DATE)", p.name, pr.value)
			}
		default:
			return nil, false, fmt.Errorf("%s: unsupported parameter %s", p.name, pr.name)
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
	seen       map[string]string // part name -> value as written
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

var listParts = map[string]intRange{
	"BYSECOND":   {0, 59, false},
	"BYMINUTE":   {0, 59, false},
	"BYHOUR":     {0, 23, false},
	"BYMONTHDAY": {1, 31, true},
	"BYYEARDAY":  {1, 366, true},
	"BYWEEKNO":   {1, 53, true},
	"BYMONTH":    {1, 12, false},
	"BYSETPOS":   {1, 366, true},
}

// parseRecur parses an RRULE value. Errors name the part and the rule,
// e.g. "BYHOUR=25: must be between 0 and 23".
func parseRecur(value string) (*recur, error) {
	rc := &recur{interval: 1, seen: map[string]string{}}
	for _, part := range strings.Split(value, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(val))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME=VALUE, e.g. FREQ=DAILY", cut(part))
		}
		if _, dup := rc.seen[name]; dup {
			return nil, fmt.Errorf("%s: given more than once", name)
		}
		if val == "" {
			return nil, fmt.Errorf("%s=: empty value", name)
		}
		rc.seen[name] = val
		var err error
		switch name {
		case "FREQ":
			i := slices.Index(frequencyNames[:], val)
			if i < 0 {
				return nil, fmt.Errorf("FREQ=%s: unknown frequency (want YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY, MINUTELY or SECONDLY)", val)
			}
			rc.freq = frequency(i)
		case "INTERVAL":
			rc.interval, err = parseBounded(name, val, 1, maxInterval)
		case "COUNT":
			rc.count, err = parseBounded(name, val, 1, maxCount)
		case "UNTIL":
			rc.until = val
		case "WKST":
			var ok bool
			if rc.wkst, ok = parseWeekday(val); !ok {
				return nil, fmt.Errorf("WKST=%s: unknown weekday (want MO, TU, WE, TH, FR, SA or SU)", val)
			}
		case "BYDAY":
			rc.byDay, err = parseByDay(val)
		default:
			rng, ok := listParts[name]
			if !ok {
				return nil, fmt.Errorf("%s=%s: unknown rule part", name, cut(val))
			}
			var list []int
			for _, s := range strings.Split(val, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					return nil, fmt.Errorf("%s=%s: not a number", name, strings.TrimSpace(s))
				}
				if !rng.ok(n) {
					return nil, fmt.Errorf("%s=%d: %v", name, n, rng)
				}
				list = append(list, n)
			}
			slices.Sort(list)
			list = slices.Compact(list)
			switch name {
			case "BYSECOND":
				rc.bySecond = list
			case "BYMINUTE":
				rc.byMinute = list
			case "BYHOUR":
				rc.byHour = list
			case "BYMONTHDAY":
				rc.byMonthDay = list
			case "BYYEARDAY":
				rc.byYearDay = list
			case "BYWEEKNO":
				rc.byWeekNo = list
			case "BYMONTH":
				rc.byMonth = list
			case "BYSETPOS":
				rc.bySetPos = list
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if _, ok := rc.seen["FREQ"]; !ok {
		return nil, errors.New("rule has no FREQ (e.g. FREQ=DAILY)")
	}
	return rc, rc.check()
}

func parseBounded(name, val string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: not a number", name, val)
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
			return nil, fmt.Errorf("BYDAY=%s: want a weekday like MO, 1MO or -1FR", s)
		}
		wd, ok := parseWeekday(s[len(s)-2:])
		if !ok {
			return nil, fmt.Errorf("BYDAY=%s: unknown weekday (want MO, TU, WE, TH, FR, SA or SU)", s)
		}
		n := 0
		if pos := s[:len(s)-2]; pos != "" {
			var err error
			if n, err = strconv.Atoi(pos); err != nil {
				return nil, fmt.Errorf("BYDAY=%s: want a weekday like MO, 1MO or -1FR", s)
			}
			if n == 0 || n > 53 || n < -53 {
				return nil, fmt.Errorf("BYDAY=%s: the position must be between 1 and 53 or -53 and -1", s)
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
		return nil, fmt.Errorf("BYDAY=%s: mixing weekdays with and without a position is not supported; use BYSETPOS or several RRULE lines", val)
	}
	return out, nil
}

// check applies the restrictions of RFC 5545 3.3.10 that depend on FREQ.
func (rc *recur) check() error {
	f := rc.freq
	show := func(name string) string { return name + "=" + rc.seen[name] }
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
		for name := range rc.seen {
			if strings.HasPrefix(name, "BY") && name != "BYSETPOS" {
				other = true
			}
		}
		if !other {
			return fmt.Errorf("%s: needs another BYxxx rule part to pick from", show("BYSETPOS"))
		}
	}
	return nil
}

// newRule builds the rule of rc anchored at the wall time start in loc.
func newRule(rc *recur, start int64, loc *time.Location, dateOnlyStart bool) (*rule, error) {
	if dateOnlyStart {
		// RFC 5545 3.3.10: with a DATE DTSTART, BYSECOND, BYMINUTE and
		// BYHOUR must be ignored.
		c := *rc
		c.byHour, c.byMinute, c.bySecond = nil, nil, nil
		rc = &c
	}
	r := &rule{
		loc:      loc,
		freq:     rc.freq,
		interval: int64(rc.interval),
		wkst:     rc.wkst,
		count:    rc.count,
		start:    start,
		byWeekNo: rc.byWeekNo,
		bySetPos: rc.bySetPos,
	}
	if rc.until != "" {
		dt, err := parseDateTime(rc.until)
		if err != nil {
			return nil, fmt.Errorf("UNTIL=%s: %w", rc.until, err)
		}
		if dt.dateOnly && !dateOnlyStart {
			return nil, fmt.Errorf("UNTIL=%s: must be a date-time like %sT235959Z, since DTSTART has a time", rc.until, rc.until)
		}
		r.until, r.hasUntil = instantOf(dt, loc), true
	}

	startDay := floorDiv(start, secondsPerDay)
	sy, sm, sd := civilFromDays(startDay)
	sec := start - startDay*secondsPerDay
	sh, smin, ss := int(sec/3600), int(sec/60%60), int(sec%60)
	swd := weekdayOf(startDay)

	byMonth, byMonthDay, byDay := rc.byMonth, rc.byMonthDay, rc.byDay
	if len(rc.byWeekNo) == 0 && len(rc.byYearDay) == 0 && len(byMonthDay) == 0 && len(byDay) == 0 {
		// Without any day part, the day comes from DTSTART.
		switch r.freq {
		case yearly:
			if len(byMonth) == 0 {
				byMonth = []int{sm}
			}
			byMonthDay = []int{sd}
		case monthly:
			byMonthDay = []int{sd}
		case weekly:
			byDay = []nthWeekday{{swd, 0}}
		}
	}
	for _, m := range byMonth {
		r.byMonth |= 1 << uint(m)
	}
	for _, d := range byMonthDay {
		if d > 0 {
			r.byMonthDay |= 1 << uint(d)
		} else {
			r.byNMonthDay |= 1 << uint(-d)
		}
	}
	for _, d := range rc.byYearDay {
		r.hasYearDay = true
		if d > 0 {
			bitSet(r.byYearDay[:], int64(d))
		} else {
			bitSet(r.byNYearDay[:], int64(-d))
		}
	}
	for _, d := range byDay {
		if d.n == 0 {
			r.byWeekday |= 1 << uint(d.weekday)
		} else {
			r.byNWeekday = append(r.byNWeekday, d)
		}
	}
	r.hasDayFilter = r.byMonth != 0 || r.byWeekday != 0 || r.byMonthDay|r.byNMonthDay != 0 || r.hasYearDay

	// Times of day: what BYHOUR, BYMINUTE and BYSECOND leave unsaid comes
	// from DTSTART, down to the frequency's own unit.
	hours, minutes, seconds := rc.byHour, rc.byMinute, rc.bySecond
	if len(hours) == 0 && r.freq < hourly {
		hours = []int{sh}
	}
	if len(minutes) == 0 && r.freq < minutely {
		minutes = []int{smin}
	}
	if len(seconds) == 0 && r.freq < secondly {
		seconds = []int{ss}
	}
	switch r.freq {
	case hourly:
		r.unit, r.perDay = 3600, 24
		for _, m := range minutes {
			for _, s := range seconds {
				r.times = append(r.times, int64(m*60+s))
			}
		}
	case minutely:
		r.unit, r.perDay = 60, 1440
		for _, s := range seconds {
			r.times = append(r.times, int64(s))
		}
	case secondly:
		r.unit, r.perDay = 1, secondsPerDay
		r.times = []int64{0}
	default:
		for _, h := range hours {
			for _, m := range minutes {
				for _, s := range seconds {
					r.times = append(r.times, int64(h*3600+m*60+s))
				}
			}
		}
	}

	if r.freq >= daily && len(r.bySetPos) > 0 {
		// A period of one day or less always holds the same times (when
		// its day passes), so BYSETPOS picks the same ones every time.
		var picked []int64
		for _, p := range r.bySetPos {
			i := p - 1
			if p < 0 {
				i = len(r.times) + p
			}
			if i >= 0 && i < len(r.times) {
				picked = append(picked, r.times[i])
			}
		}
		if len(picked) == 0 {
			return nil, fmt.Errorf("%w: BYSETPOS=%s picks nothing, as each %v period holds %d occurrence(s)",
				ErrNoOccurrence, rc.seen["BYSETPOS"], r.freq, len(r.times))
		}
		slices.Sort(picked)
		r.times, r.bySetPos = slices.Compact(picked), nil
	}

	switch r.freq {
	case yearly:
		r.origin = int64(sy)
	case monthly:
		r.origin = int64(sy)*12 + int64(sm-1)
	case weekly:
		r.origin = startDay - floorMod(int64(swd-r.wkst), 7)
	case daily:
		r.origin = startDay
	default:
		r.origin = floorDiv(start, r.unit)
		if err := r.buildSlots(rc); err != nil {
			return nil, err
		}
	}

	if r.count > 0 {
		if !r.walkCount() {
			return nil, ErrNoOccurrence
		}
	} else if !r.exists() {
		return nil, ErrNoOccurrence
	}
	return r, nil
}

// buildSlots computes, for HOURLY and finer, which periods of a day BYHOUR,
// BYMINUTE and BYSECOND allow, keeping only those INTERVAL can reach from
// DTSTART.
func (r *rule) buildSlots(rc *recur) error {
	filtered := len(rc.byHour) > 0 ||
		r.freq >= minutely && len(rc.byMinute) > 0 ||
		r.freq >= secondly && len(rc.bySecond) > 0
	if !filtered {
		return nil
	}
	in := func(list []int, v int64) bool { return len(list) == 0 || slices.Contains(list, int(v)) }
	step := gcd(r.interval, r.perDay)
	phase := floorMod(r.origin, step)
	r.slots = make([]uint64, (r.perDay+63)/64)
	any := false
	for slot := phase; slot < r.perDay; slot += step {
		var h, m, s int64
		switch r.freq {
		case hourly:
			h = slot
		case minutely:
			h, m = slot/60, slot%60
		case secondly:
			h, m, s = slot/3600, slot/60%60, slot%60
		}
		if in(rc.byHour, h) && (r.freq < minutely || in(rc.byMinute, m)) && (r.freq < secondly || in(rc.bySecond, s)) {
			bitSet(r.slots, slot)
			any = true
		}
	}
	if !any {
		parts := []string{}
		for _, name := range []string{"BYHOUR", "BYMINUTE", "BYSECOND"} {
			if v, ok := rc.seen[name]; ok {
				parts = append(parts, name+"="+v)
			}
		}
		return fmt.Errorf("%w: with FREQ=%v;INTERVAL=%d from DTSTART, %s is never reached",
			ErrNoOccurrence, r.freq, r.interval, strings.Join(parts, ";"))
	}
	return nil
}
