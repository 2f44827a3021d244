package rrule

import (
	"fmt"
	"math/bits"
	"sync"
)

// Cost. A search (Next, First) looks at periods, months and slots one by
// one until it finds an occurrence, so its work depends on the longest
// stretch without occurrence it may have to cross. Parse computes, for
// each rule, a bound on the steps one search takes (rule.bound) and
// refuses a schedule whose bound exceeds Limits.MaxSteps. The bound comes
// from the calendar's 400-year cycle (146,097 days, 20,871 weeks, 4,800
// months), after which the days that pass a rule's filters repeat:
//
//   - YEARLY, MONTHLY, WEEKLY: the longest run of periods without an
//     occurrence, over one cycle of periods (at most 400, 4,800 or
//     20,871 of them, each looked at with a table lookup);
//   - DAILY and finer: the longest run of months without a passing day
//     (the search walks month by month), plus, when INTERVAL skips days
//     or slots, either a proof that every run of passing days holds a
//     period (the run is at least as long as the step), or a walk over
//     the rule's whole cycle, whose own work is capped (see work).
//
// The fuzz test checks that no search exceeds its bound, and that Parse
// counts its own work exactly against Limits.MaxParseSteps (see work).

// work accounts for what Parse spends on one schedule, in steps, against
// Limits.MaxParseSteps: reading the text, building the rules' tables,
// checking how long a search may take, walking COUNT rules, checking
// EXDATEs. It also holds what the rules of the schedule share: tables of
// equal filters, and what was learnt of them.
type work struct {
	max   int // Limits.MaxParseSteps
	used  int
	multi bool // the schedule has several rules
	bytes int  // memory of the tables built for the schedule

	days  map[filter]dayTables
	slots map[slotKey]*slotTable
	empty map[*[monthShapes]uint32]emptyRun
	cycle map[*[monthShapes]uint32][]uint64
	// pooled are the bitsets of cycle, for release.
	pooled []*[cycleWords]uint64
}

// emptyRun is what emptyMonths found.
type emptyRun struct {
	run int
	ok  bool
}

func newWork(lim *Limits) *work {
	return &work{max: lim.MaxParseSteps}
}

// spend counts n steps and reports whether the budget still holds.
func (w *work) spend(n int) bool {
	w.used += n
	return w.used <= w.max
}

// exceeded returns the error of a schedule whose Parse would take more
// than Limits.MaxParseSteps: what takes them, and what to do.
func (w *work) exceeded(what, advice string) error {
	return limitErrorf("MaxParseSteps", "%s takes more than %d steps (Limits.MaxParseSteps); %s", what, w.max, advice)
}

// ruleExceeded is exceeded for the work on a rule: doing the rule, or,
// among several (whose error names the line), the rules up to this one.
func (w *work) ruleExceeded(doing string) error {
	if w.multi {
		return w.exceeded(doing+" the rules up to this one", "use fewer or simpler rules")
	}
	return w.exceeded("RRULE: "+doing+" the rule", "simplify the rule")
}

// Parse steps of the analyses below.
const (
	tableBytesPerStep = 4 // bytes of table the schedule keeps, per step
	monthsPerStep     = 4 // months of the 400-year cycle looked at per step
	periodsPerStep    = 2 // periods of a cycle looked at per step
)

// cycle holds tables of the calendar's 400-year cycle from January 2000,
// built at start: each month's shape and first day (counted from
// cycleStart), and each year's shape.
var cycle = func() (c struct {
	months [4800]uint8
	firsts [4800]int32
	years  [400]uint8
}) {
	at := int32(0)
	for i := range c.months {
		y, m := 2000+i/12, i%12+1
		c.months[i] = uint8(monthShape(m, isLeap(y), weekdayOf(cycleStart+int64(at))))
		c.firsts[i] = at
		at += int32(daysInMonth(y, m))
	}
	for i := range c.years {
		sh, _ := yearShapeOf(2000 + i)
		c.years[i] = uint8(sh)
	}
	return c
}()

// monthAt returns the shape and the first day of month mi (counted from
// January of year 0).
func monthAt(mi int64) (shape uint8, first int64) {
	c := floorDiv(mi-2000*12, 4800)
	j := mi - 2000*12 - c*4800
	return cycle.months[j], cycleStart + c*146097 + int64(cycle.firsts[j])
}

// monthOf returns the month of day within the 400-year cycle (an index of
// cycle.months) and day's place in it (1 for the first day).
func monthOf(day int64) (j, d int) {
	off := int(floorMod(day-cycleStart, 146097))
	// Months are 28 to 31 days long: the estimate is at most one off.
	j = off * 4800 / 146097
	if int(cycle.firsts[j]) > off {
		j--
	} else if j < 4799 && int(cycle.firsts[j+1]) <= off {
		j++
	}
	return j, off - int(cycle.firsts[j]) + 1
}

// shapeDays returns the number of days of a month of shape sh.
func shapeDays(sh uint8) int { return int(shapeLengths[sh]) }

// shapeLengths holds the number of days of a month of each shape.
var shapeLengths = func() (out [monthShapes]uint8) {
	for sh := range out {
		m, leap := sh/14+1, sh/7%2 == 1
		out[sh] = uint8(cumulativeDays[m] - cumulativeDays[m-1])
		if m == 2 && leap {
			out[sh] = 29
		}
	}
	return out
}()

// shapeSet is a set of month shapes.
type shapeSet [3]uint64

func (s *shapeSet) add(sh int)        { s[sh>>6] |= 1 << uint(sh&63) }
func (s *shapeSet) has(sh uint8) bool { return s[sh>>6]&(1<<uint(sh&63)) != 0 }
func (s *shapeSet) count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2])
}

// byMonthOfYear returns, when whether a shape is in s depends only on its
// month, the months (bit m-1) whose shapes are in s.
func (s *shapeSet) byMonthOfYear() (uint16, bool) {
	var months uint16
	for m := 1; m <= 12; m++ {
		n := 0
		for sh := monthShape(m, false, 0); sh < monthShape(m, false, 0)+14; sh++ {
			if s.has(uint8(sh)) {
				n++
			}
		}
		switch n {
		case 14:
			months |= 1 << uint(m-1)
		case 0:
		default:
			return 0, false
		}
	}
	return months, true
}

// longestGap returns the longest run of bits not set among the n low bits
// of set, read as a cycle, or false if none is set.
func longestGap(set uint64, n int) (int, bool) {
	if set == 0 {
		return 0, false
	}
	longest, run := 0, 0
	for i := range 2 * n {
		if set&(1<<uint(i%n)) != 0 {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return min(longest, n), true
}

// emptyMonths returns the longest run of months without a passing day,
// over the cycle (a run may wrap around it), or false if no month has one.
func (r *rule) emptyMonths(w *work) (int, bool, error) {
	if e, ok := w.empty[r.months]; ok {
		return e.run, e.ok, nil
	}
	var nonEmpty shapeSet
	for sh, days := range r.months {
		if days != 0 {
			nonEmpty.add(sh)
		}
	}
	var e emptyRun
	if months, ok := nonEmpty.byMonthOfYear(); ok {
		// The months of each year are alike.
		e.run, e.ok = longestGap(uint64(months), 12)
	} else {
		if !w.spend(len(cycle.months) / monthsPerStep) {
			return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
		}
		longest, run, lead := 0, 0, 0
		for _, sh := range &cycle.months {
			if !nonEmpty.has(sh) {
				run++
				continue
			}
			if !e.ok {
				lead, e.ok = run, true
			}
			longest, run = max(longest, run), 0
		}
		e.run = max(longest, run+lead)
	}
	if w.empty == nil {
		w.empty = map[*[monthShapes]uint32]emptyRun{}
	}
	w.empty[r.months] = e
	return e.run, e.ok, nil
}

// shorts counts, along a cycle of runs of passing days (stretches of
// consecutive passing days), the longest sequence of consecutive runs
// shorter than n days.
type shorts struct {
	n, cur, lead, most int
	long               bool // a run of n days or more was seen
}

func (t *shorts) add(run int) {
	if run < t.n {
		t.cur++
		return
	}
	if !t.long {
		// The runs before the first long one follow the last ones.
		t.lead, t.long = t.cur, true
	} else {
		t.most = max(t.most, t.cur)
	}
	t.cur = 0
}

// result returns the longest sequence of short runs, read as a cycle, and
// false if every run is short.
func (t *shorts) result() (int, bool) {
	return max(t.most, t.cur+t.lead), t.long
}

// shortRuns returns the longest sequence of consecutive runs of passing
// days shorter than n days, over the 400-year cycle read as a cycle, and
// false if every run is shorter than n days.
func (r *rule) shortRuns(n int, w *work) (int, bool, error) {
	t := shorts{n: n}
	if r.weekdays {
		// The runs repeat every week: those of the weekdays that pass,
		// Monday being bit 0, read from a day that does not pass.
		set := int(r.months[monthShape(1, false, 0)] >> 1 & 0x7f)
		if set == 0x7f {
			return 0, true, nil
		}
		z := bits.TrailingZeros8(^uint8(set))
		run := 0
		for i := 1; i <= 7; i++ {
			if set&(1<<uint((z+i)%7)) != 0 {
				run++
			} else if run > 0 {
				t.add(run)
				run = 0
			}
		}
		most, ok := t.result()
		return most, ok, nil
	}
	if n <= 28 && r.fullMonths() {
		// A run of passing days is one or more whole months.
		return 0, true, nil
	}
	run, head := 0, -1 // head: the run that starts the cycle, once closed
	for _, sh := range &cycle.months {
		dim := shapeDays(sh)
		m := uint64(r.months[sh] >> 1) // bit d-1 for day d
		// A step per month and per run.
		if !w.spend(1 + bits.OnesCount64(m&^(m<<1))) {
			return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
		}
		for pos := 0; pos < dim; {
			rest := m >> uint(pos)
			if rest&1 != 0 {
				ones := min(bits.TrailingZeros64(^rest), dim-pos)
				run, pos = run+ones, pos+ones
				continue
			}
			switch {
			case head < 0:
				head = run
			case run > 0:
				t.add(run)
			}
			run = 0
			if rest == 0 {
				break
			}
			pos += bits.TrailingZeros64(rest)
		}
	}
	if head < 0 {
		return 0, true, nil // every day passes
	}
	// The run at the end continues into the one at the start.
	if run += head; run > 0 {
		t.add(run)
	}
	most, ok := t.result()
	return most, ok, nil
}

// maxShortRuns bounds the sequences of short runs of passing days (see
// shortRuns) a bound on a search may count on; beyond, or when every run
// is short, Parse looks at which runs hold a period (missedRuns).
const maxShortRuns = 16

// stepsWeekSkip is the work of skipping the weeks without a passing day
// up to the next one, counted as weeks looked at (see periodRuns).
const stepsWeekSkip = 8

// maxMissedWalk bounds the walk of missedRuns, in steps (see work): the
// same for any budget, so that what Parse counts does not depend on it.
const maxMissedWalk = 60_000

// hits counts, along the runs of passing days, the longest sequence of
// consecutive runs that hold no period.
type hits struct {
	cur, lead, most int
	hit             bool // a run that holds a period was seen
}

func (t *hits) add(hit bool) {
	switch {
	case !hit:
		t.cur++
		return
	case !t.hit:
		t.lead, t.hit = t.cur, true
	default:
		t.most = max(t.most, t.cur)
	}
	t.cur = 0
}

// missedRuns returns, for a DAILY rule or a finer one with an INTERVAL of
// a day or more and no slot filter, the longest sequence of consecutive
// runs of passing days that hold no period start, over the time after
// which both the days and the periods fall alike (a number of weeks, for
// a filter of weekdays only, or of 400-year cycles) or to the rule's last
// day if that comes first, and false if that walk would take more than
// maxMissedWalk steps, or finds no run that holds a period (simulate then
// answers).
func (r *rule) missedRuns(w *work) (int, bool, error) {
	unit := int64(1) // period starts are counted in days, or in slots
	if r.freq > daily {
		unit = r.perDay
	}
	i := r.interval
	period, cost := int64(146097), int64(len(cycle.months)) // days, and steps per period
	var week []int64                                        // the runs of a week: offset and length
	first := cycleStart + floorDiv(r.startDay-cycleStart, 146097)*146097
	if r.weekdays {
		// Weeks from a day that does not pass hold whole runs.
		set := int(r.months[monthShape(1, false, 0)] >> 1 & 0x7f)
		if set == 0x7f {
			return 0, true, nil
		}
		z := bits.TrailingZeros8(^uint8(set))
		for d := 1; d < 7; d++ {
			if set&(1<<uint((z+d)%7)) == 0 {
				continue
			}
			if n := len(week); n > 0 && week[n-2]+week[n-1] == int64(d) {
				week[n-1]++
			} else {
				week = append(week, int64(d), 1)
			}
		}
		period, cost = 7, int64(1+len(week)/2)
		first = r.startDay - floorMod(int64(weekdayOf(r.startDay)-z), 7)
	}
	cycles := i / gcd(i, period*unit)
	last := first + cycles*period - 1
	wrap := last <= r.lastDay
	if !wrap {
		last = r.lastDay
	}
	if walk := (last - first + 1) / period * cost; walk > maxMissedWalk {
		return 0, false, nil
	}
	var t hits
	// add counts the run from day s to day e, runs coming in order but
	// for the last (with wrap): whether it holds a period start. next is
	// the first period start at or after the last run's.
	next := first*unit + floorMod(r.origin-first*unit, i)
	add := func(s, e int64) {
		lo := s * unit
		if next < lo {
			if gap := lo - next; gap > 8*i {
				next += gap / i * i
			}
			for next < lo {
				next += i
			}
		}
		t.add(next <= (e+1)*unit-1)
	}
	if week != nil {
		for day := first; day <= last; day += 7 {
			for k := 0; k < len(week); k += 2 {
				add(day+week[k], day+week[k]+week[k+1]-1)
			}
			if !w.spend(int(cost)) {
				return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
			}
		}
		return r.missedResult(&t, wrap)
	}
	// Runs are read month by month; with wrap, the run that starts the
	// walk (head) continues the one that ends it.
	start, run := int64(0), int64(0)
	head, headSeen, headRun := int64(0), false, false
	day, cm := first, &cycle.months
	for k := 0; day <= last; k++ {
		sh := cm[k%len(cm)]
		dim := int64(shapeDays(sh))
		m := uint64(r.months[sh] >> 1) // bit d-1 for day d
		closed := 0
		for pos := int64(0); pos < dim; {
			rest := m >> uint(pos)
			if rest&1 != 0 {
				ones := min(int64(bits.TrailingZeros64(^rest)), dim-pos)
				if run == 0 {
					start = day + pos
				}
				run, pos = run+ones, pos+ones
				continue
			}
			switch {
			case run > 0 && wrap && !headSeen && start == first:
				head, headRun = start+run-1, true
			case run > 0:
				add(start, start+run-1)
				closed++
			}
			headSeen, run = true, 0
			if rest == 0 {
				break
			}
			pos += int64(bits.TrailingZeros64(rest))
		}
		day += dim
		if !w.spend(1 + closed) {
			return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
		}
	}
	switch {
	case !wrap && run > 0:
		add(start, min(start+run-1, last))
	case !wrap:
	case !headSeen:
		return 0, true, nil // every day passes
	case run > 0 && headRun:
		// The last run continues into the first, a cycle later.
		add(start, head+cycles*period)
	case run > 0:
		add(start, start+run-1)
	case headRun:
		add(first, head)
	}
	return r.missedResult(&t, wrap)
}

// missedResult returns what missedRuns found, read as a cycle with wrap.
func (r *rule) missedResult(t *hits, wrap bool) (int, bool, error) {
	switch {
	case !t.hit:
		return 0, false, nil
	case wrap:
		return max(t.most, t.cur+t.lead), true, nil
	default:
		return max(t.most, t.cur, t.lead), true, nil
	}
}

// fullMonths reports whether every month that has a passing day passes
// whole.
func (r *rule) fullMonths() bool {
	for m := 1; m <= 12; m++ {
		for sh := monthShape(m, false, 0); sh < monthShape(m, false, 0)+14; sh++ {
			dim := cumulativeDays[m] - cumulativeDays[m-1]
			if m == 2 && sh >= monthShape(2, true, 0) {
				dim++
			}
			if days := r.months[sh]; days != 0 && days != uint32(1)<<uint(dim+1)-2 {
				return false
			}
		}
	}
	return true
}

// cycleStart is the first day of the 400-year cycle of the tables of cycle.
var cycleStart = daysFromCivil(2000, 1, 1)

// cycleDays returns the days of the 400-year cycle from cycleStart that
// pass the rule's month table, as a bitset, followed by the first 6 days
// of the next cycle. It lays out the passing days of each of the 14 kinds
// of year (weekday of January 1st, leap or not) once, then copies one of
// them for each year of the cycle. The bitset comes from a pool and goes
// back to it when the parse is done (work.release).
func (r *rule) cycleDays(w *work) ([]uint64, error) {
	if days, ok := w.cycle[r.months]; ok {
		return days, nil
	}
	if !w.spend(len(cycle.months) / monthsPerStep) {
		return nil, w.ruleExceeded("bounding the search for an occurrence of")
	}
	// years[wd0*2+leap]: the passing days of such a year.
	var years [14][6]uint64
	for k := range years {
		years[k] = yearDays(r.months, k/2, k%2 == 1)
	}
	days := cycleDaysPool.Get().(*[cycleWords]uint64)
	clear(days[:])
	at := 0
	for _, sh := range &cycle.years {
		leap := sh&2 != 0
		year := &years[int(sh)/4*2+btoi(leap)]
		for i, v := range year {
			orBits(days[:], at+64*i, v)
		}
		at += 365 + btoi(leap)
	}
	// The week from each of the last 6 days runs into the next cycle.
	days[146097>>6] |= (days[0] & 0x3f) << uint(146097&63)
	if w.cycle == nil {
		w.cycle = map[*[monthShapes]uint32][]uint64{}
	}
	w.cycle[r.months] = days[:]
	w.pooled = append(w.pooled, days)
	return days[:], nil
}

// cycleWords is the size of the cycle's days as a bitset (146,097 days
// and 6 more).
const cycleWords = (146097+63)/64 + 1

// cycleDaysPool holds the bitsets of cycleDays between parses.
var cycleDaysPool = sync.Pool{New: func() any { return new([cycleWords]uint64) }}

// release gives back what the parse borrowed: the bitsets of cycleDays.
func (w *work) release() {
	for _, d := range w.pooled {
		cycleDaysPool.Put(d)
	}
	w.pooled, w.cycle = nil, nil
}

// orBits sets in set the bits of v shifted to bit at.
func orBits(set []uint64, at int, v uint64) {
	if v == 0 {
		return
	}
	set[at>>6] |= v << uint(at&63)
	if at&63 != 0 {
		set[at>>6+1] |= v >> uint(64-at&63)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runs tracks the longest run of periods without an entry.
type runs struct {
	longest, run, lead int64
	seen               bool
}

func (t *runs) add(active bool) {
	if !active {
		t.run++
		return
	}
	if !t.seen {
		t.lead, t.seen = t.run, true
	}
	t.longest, t.run = max(t.longest, t.run), 0
}

// periodRuns returns the longest run of periods without an entry among
// periods 0 to n-1 (YEARLY, MONTHLY, WEEKLY with BYMONTH), counting a run
// that wraps around when wrap is set, or false if none of them has an
// entry. The periods up to n all start by r.lastDay.
func (r *rule) periodRuns(n int64, wrap bool, w *work) (int64, bool, error) {
	var t runs
	switch {
	case r.freq == yearly:
		var act uint32 // by year shape
		for sh, c := range r.yearCount {
			if int(c)*r.nt >= r.minPick {
				act |= 1 << uint(sh)
			}
		}
		switch act {
		case 0:
			return 0, false, nil
		case 1<<yearShapes - 1:
			return 0, n > 0, nil
		}
		if !w.spend(int(n)/periodsPerStep + 1) {
			return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
		}
		cy := &cycle.years
		at, step := floorMod(r.origin-2000, 400), r.interval%400
		for range n {
			t.add(act&(1<<cy[at]) != 0)
			if at += step; at >= 400 {
				at -= 400
			}
		}
	case r.freq == monthly:
		var act shapeSet
		for sh, c := range r.monthCount {
			if int(c)*r.nt >= r.minPick {
				act.add(sh)
			}
		}
		switch act.count() {
		case 0:
			return 0, false, nil
		case monthShapes:
			return 0, n > 0, nil
		}
		if !w.spend(int(n)/periodsPerStep + 1) {
			return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
		}
		cm := &cycle.months
		at, step := floorMod(r.origin-2000*12, 4800), r.interval%4800
		for range n {
			t.add(act.has(cm[at]))
			if at += step; at >= 4800 {
				at -= 4800
			}
		}
	default: // WEEKLY with BYMONTH
		days, err := r.cycleDays(w)
		if err != nil {
			return 0, false, err
		}
		if nextSetBit(days, 0) < 0 {
			return 0, false, nil
		}
		need := (r.minPick + r.nt - 1) / r.nt // passing days a week needs
		at, span := floorMod(r.origin-cycleStart, 146097), 7*r.interval
		step := span % 146097
		looked := 0 // weeks looked at, and stepsWeekSkip per skip
		for k := int64(0); k < n; {
			if looked++; looked&1023 == 0 && w.used+looked/periodsPerStep > w.max {
				return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
			}
			word := days[at>>6] >> uint(at&63)
			if at&63 > 57 {
				word |= days[at>>6+1] << uint(64-at&63)
			}
			skip := int64(1)
			if c := bits.OnesCount64(word & 0x7f); c >= need {
				t.add(true)
			} else {
				if c == 0 {
					// No day of this week passes, nor any before the
					// next passing day p: skip the weeks that end
					// before it.
					p := nextSetBit(days, at+7)
					if p < 0 {
						p = 146097 + nextSetBit(days, 0)
					}
					// (p > at+6: a plain division rounds up.)
					skip = min(max(1, (p-at-6+span-1)/span), n-k)
					looked += stepsWeekSkip
				}
				t.run += skip
			}
			k += skip
			if at += skip % 146097 * step; at >= 146097 {
				at %= 146097
			}
		}
		if !w.spend(looked/periodsPerStep + 1) {
			return 0, false, w.ruleExceeded("bounding the search for an occurrence of")
		}
	}
	if wrap {
		t.run += t.lead
	}
	return max(t.longest, t.run), t.seen, nil
}

// analyze computes r.bound, the steps one search of the rule may take, and
// for a COUNT rule its last occurrence. w accounts for Parse's work.
func (r *rule) analyze(w *work) error {
	if r.neverActive() {
		return ErrNoOccurrence
	}
	if r.count > 0 {
		if err := r.walkCount(w); err != nil {
			return err
		}
	}
	act, err := r.activeBound(w)
	if err != nil {
		return err
	}
	first := stepsFirst
	if n := len(r.setPos) + len(r.setNeg); n > 0 {
		first += (n + 1) * (1 + stepsWallAt)
	}
	// A find takes at most two calls of active (the period holding the
	// wall time may end before it), each followed by load and first. A
	// search takes one find, and near a daylight-saving gap two more,
	// limited to a day or two.
	per := stepsLoad + first
	find := 2 * (act + per)
	small := 2 * (min(act, r.smallActive()) + per)
	r.bound = find + 2*small + 2*stepsResolve
	return nil
}

// neverActive reports whether no period of a YEARLY, MONTHLY or WEEKLY
// rule can hold an entry, whatever its shape: BYSETPOS asks for more
// entries than a period ever has.
func (r *rule) neverActive() bool {
	if r.minPick <= r.nt {
		return false
	}
	switch r.freq {
	case yearly:
		for _, c := range r.yearCount {
			if int(c)*r.nt >= r.minPick {
				return false
			}
		}
		return true
	case monthly:
		for _, c := range r.monthCount {
			if int(c)*r.nt >= r.minPick {
				return false
			}
		}
		return true
	case weekly:
		return bits.OnesCount8(r.week)*r.nt < r.minPick
	}
	return false
}

// stepsWallAt is the work of placing a BYSETPOS entry in its period.
const stepsWallAt = 4

// smallActive bounds active over a day or two.
func (r *rule) smallActive() int {
	switch r.freq {
	case yearly:
		return 3
	case monthly:
		return 3 * stepsMonth
	case weekly:
		if r.weekByMo {
			return 3 * stepsWeekByMonth
		}
		return 3
	case daily:
		return 3*(1+stepsDay) + 3*(stepsScan+3)
	default:
		return 3*(1+stepsDay+r.slotScan()) + 3*(stepsScan+3)
	}
}

// slotScan bounds nextAlignedSlot.
func (r *rule) slotScan() int {
	switch {
	case r.slots == nil || r.interval >= r.perDay:
		return 0
	case r.aligned:
		return 1 + len(r.slotWords)
	default:
		return r.strides + 1
	}
}

// horizon returns the number of periods from period 0 to the last one
// that may start by r.lastDay, at most limit+1.
func (r *rule) horizon(limit int64) int64 {
	var n int64
	switch r.freq {
	case yearly:
		y, _, _ := civilFromDays(r.lastDay)
		n = (int64(y)-r.origin)/r.interval + 1
	case monthly:
		y, m, _ := civilFromDays(r.lastDay)
		n = (int64(y)*12+int64(m-1)-r.origin)/r.interval + 1
	case weekly:
		n = (r.lastDay-r.origin)/(7*r.interval) + 1
	}
	return min(n, limit+1)
}

// activeBound bounds the steps one call of active takes.
func (r *rule) activeBound(w *work) (int, error) {
	noOcc := func() (int, error) { return 0, ErrNoOccurrence }
	switch r.freq {
	case yearly, monthly, weekly:
		if r.freq == weekly && !r.weekByMo {
			// Every week is alike.
			return 2, nil
		}
		cycle, cost := int64(400), 1
		switch {
		case r.freq == monthly:
			cycle, cost = 4800, stepsMonth
		case r.weekByMo:
			cycle, cost = 20871, stepsWeekByMonth
		}
		cycle /= gcd(cycle, r.interval)
		n := r.horizon(cycle)
		run, ok, err := r.periodRuns(min(n, cycle), n > cycle, w)
		if err != nil {
			return 0, err
		}
		if !ok {
			return noOcc()
		}
		return (int(run) + 2) * cost, nil
	}
	scan, day := 0, 1 // one nextPassingDay; one iteration of active
	if r.months != nil {
		e, ok, err := r.emptyMonths(w)
		if err != nil {
			return 0, err
		}
		if !ok {
			return noOcc()
		}
		scan, day = stepsScan+e+2, 1+stepsDay
	}
	slot := r.slotScan()
	// skipping bounds active for a rule whose periods start every n days
	// or so (DAILY, or finer with an INTERVAL of a day or more): a period
	// whose day does not pass leads to the next passing day and the first
	// period from it, which holds an occurrence if the run of passing
	// days from there is n days long; each that does not skips a run
	// shorter than n days.
	skipping := func(n int64) (int, bool, error) {
		short, ok := 0, true
		if r.months != nil && n > 1 {
			var err error
			if short, ok, err = r.shortRuns(int(n), w); err != nil {
				return 0, false, err
			}
		}
		if !ok || short > maxShortRuns {
			var err error
			if short, ok, err = r.missedRuns(w); err != nil || !ok {
				return 0, false, err
			}
		}
		return (short+2)*day + (short+1)*scan, true, nil
	}
	switch r.freq {
	case daily:
		if act, ok, err := skipping(r.interval); err != nil || ok {
			return act, err
		}
	default:
		if r.interval < r.perDay {
			ok := r.slots == nil || r.aligned
			if !ok {
				var err error
				if ok, err = r.everyDayReaches(w); err != nil {
					return 0, err
				}
			}
			if ok {
				// Every passing day has an allowed slot INTERVAL
				// reaches: at worst the rest of this day, then the
				// next passing day.
				return 3*day + scan + 2*slot, nil
			}
		} else if r.slots == nil {
			if act, ok, err := skipping(ceilDiv(r.interval, r.perDay)); err != nil || ok {
				return act, err
			}
		}
	}
	return r.simulate(w, scan)
}

// everyDayReaches reports, for HOURLY and finer with an INTERVAL shorter
// than a day that does not divide it, whether every day has an allowed
// slot that INTERVAL reaches. Day d reaches the slots congruent to
// origin-d*perDay modulo INTERVAL.
func (r *rule) everyDayReaches(w *work) (bool, error) {
	i := r.interval
	c := floorMod(r.origin, i)
	classes := i / gcd(i, r.perDay)
	few := r.nSlots <= int(r.perDay/i)
	cost := int(classes) * stepsReachClass
	if few {
		cost += r.nSlots
	}
	if !w.spend(cost) {
		return false, w.ruleExceeded("bounding the search for an occurrence of")
	}
	if few {
		// Few slots: mark the classes they fall in.
		good := make([]uint64, (i+63)/64)
		for b := nextSetBit(r.slots, 0); b >= 0; b = nextSetBit(r.slots, b+1) {
			bitSet(good, b%i)
		}
		for range classes {
			if !bitTest(good, c) {
				return false, nil
			}
			c = floorMod(c-r.perDay, i)
		}
		return true, nil
	}
	// Many: walk each class until a slot, a walk of at most a day's slots
	// in all, counted once done.
	looked, reaches := 0, true
	for range classes {
		b := c
		for ; b < r.perDay && !bitTest(r.slots, b); b += i {
			looked++
		}
		if b >= r.perDay {
			reaches = false
			break
		}
		c = floorMod(c-r.perDay, i)
	}
	if !w.spend(looked / slotsPerStep) {
		return false, w.ruleExceeded("bounding the search for an occurrence of")
	}
	return reaches, nil
}

// simulate walks the rule over its cycle (the days that pass its filters
// repeat every 400 years, the periods INTERVAL reaches every so many
// days) or, if shorter, up to its last day, and returns the most steps
// one call of active took, plus a margin for calls that start between
// the ones walked. Its work is charged to w.
func (r *rule) simulate(w *work, scan int) (int, error) {
	dayCycle := int64(1)
	switch {
	case r.months == nil:
	case r.weekdays:
		dayCycle = 7
	default:
		dayCycle = 146097
	}
	align := r.interval // DAILY: days
	if r.freq > daily {
		align = r.interval / gcd(r.interval, r.perDay)
	}
	cycle := r.lastDay - r.startDay + 1
	if g := gcd(dayCycle, align); dayCycle/g <= cycle/align {
		cycle = dayCycle / g * align
	}
	end := r.startDay + cycle // walk until a call crosses it
	it := iter{r: r, lim: min(r.lastDay, end+cycle)}
	most, seen := 0, false
	for k := int64(0); ; {
		it.steps, it.cap = 0, max(w.max-w.used, 0)+1
		got, ok := it.active(k)
		most = max(most, it.steps)
		if !w.spend(it.steps) {
			return 0, w.ruleExceeded("bounding the search for an occurrence of")
		}
		if !ok {
			break
		}
		seen = true
		if r.periodDay(got) >= end {
			break
		}
		k = got + 1
	}
	if !seen {
		return 0, ErrNoOccurrence
	}
	return most + scan + 2, nil
}

// periodDay returns the day on which period k starts.
func (r *rule) periodDay(k int64) int64 {
	switch r.freq {
	case daily:
		return r.origin + k*r.interval
	default:
		return floorDiv((r.origin+k*r.interval)*r.unit, secondsPerDay)
	}
}

// evenPeriods reports whether every period of the rule holds the same
// entries, so that its COUNT-th occurrence can be found without walking:
// DAILY and finer without a day filter or, for finer, a slot filter, and
// WEEKLY without BYMONTH.
func (r *rule) evenPeriods() bool {
	switch r.freq {
	case yearly, monthly:
		return false
	case weekly:
		return !r.weekByMo
	default:
		return r.months == nil && r.slots == nil
	}
}

// stepsCountJump is the work of finding the COUNT-th occurrence of a rule
// whose periods are even.
const stepsCountJump = 64

// walkCount finds the COUNT-th occurrence of a COUNT rule from DTSTART,
// and ends the rule there: for even periods by arithmetic, otherwise by
// walking them.
func (r *rule) walkCount(w *work) error {
	if r.freq == daily && r.interval == 1 && r.months != nil {
		return r.countMonths(w)
	}
	it := iter{r: r, lim: r.lastDay}
	emitted := 0
	last, any := int64(0), false
	// The last entry so far, found only at the end: period lastK, entry
	// lastEntry (lastK < 0 once last holds it).
	lastK, lastEntry := int64(-1), 0
	refuse := func() error {
		return w.exceeded(fmt.Sprintf("COUNT=%d: counting the occurrences from DTSTART", r.count), "lower COUNT")
	}
	for k := int64(0); ; k++ {
		var ok bool
		it.cap = max(w.max-w.used, 0) + 1
		if k, ok = it.active(k); !ok {
			if it.steps > it.cap {
				return refuse()
			}
			break
		}
		it.load(k)
		from := 0 // entries before DTSTART do not count
		if k == 0 {
			from = it.rank(r.start)
		}
		n := it.entries() - from
		if n > 0 && emitted+n >= r.count {
			last, any, lastK = it.entry(from+r.count-emitted-1), true, -1
			emitted = r.count
			break
		}
		if n > 0 {
			lastK, lastEntry, any = k, from+n-1, true
			emitted += n
		}
		if k == 0 && r.evenPeriods() {
			// Every later period holds per entries: jump to the one
			// that holds the COUNT-th.
			it.load(1)
			per := it.entries()
			if per == 0 {
				break
			}
			left := r.count - emitted
			target := 1 + int64(left-1)/int64(per)
			if !w.spend(stepsCountJump) {
				return refuse()
			}
			if got, ok := it.active(target); ok && got == target {
				it.load(target)
				last, any, lastK = it.entry((left-1)%per), true, -1
				emitted = r.count
				break
			}
			// It starts after the rule's last day: walk to it.
		}
		if w.used+it.steps > w.max {
			return refuse()
		}
	}
	if !w.spend(it.steps) {
		return refuse()
	}
	if !any {
		return ErrNoOccurrence
	}
	if lastK >= 0 {
		at := iter{r: r, lim: r.lastDay}
		at.load(lastK)
		last = at.entry(lastEntry)
	}
	r.lastWall = min(r.lastWall, last)
	r.lastDay = floorDiv(r.lastWall, secondsPerDay)
	return nil
}

// countMonths is walkCount for a DAILY rule with INTERVAL=1 and a day
// filter, whose occurrences are the times of the passing days: it counts
// them a month at a time.
func (r *rule) countMonths(w *work) error {
	it := iter{r: r, lim: r.lastDay}
	nt := r.nt
	emitted := 0
	last, any := int64(0), false
	if r.dayPasses(r.startDay) {
		// DTSTART's day: the times from DTSTART on.
		it.load(0)
		from := it.rank(r.start)
		if n := nt - from; n >= r.count {
			last, any, emitted = it.entry(from+r.count-1), true, r.count
		} else if n > 0 {
			last, any, emitted = it.entry(nt-1), true, n
		}
	}
	day := r.startDay + 1
	y, m, d := civilFromDays(day)
	first := day - int64(d-1)
	for emitted < r.count && first <= it.lim {
		it.steps++
		dim := daysInMonth(y, m)
		mask := r.months[monthShape(m, isLeap(y), weekdayOf(first))] >> uint(d) << uint(d)
		if end := first + int64(dim) - 1; end > it.lim {
			mask &= uint32(1)<<uint(it.lim-first+2) - 1
		}
		if c := bits.OnesCount32(mask) * nt; emitted+c >= r.count {
			i := r.count - emitted - 1
			for range i / nt {
				mask &= mask - 1
			}
			day := first + int64(bits.TrailingZeros32(mask)) - 1
			last, any, emitted = day*secondsPerDay+r.timeAt(i%nt), true, r.count
		} else if c > 0 {
			day := first + int64(31-bits.LeadingZeros32(mask)) - 1
			last, any, emitted = day*secondsPerDay+r.timeAt(nt-1), true, emitted+c
		}
		first += int64(dim)
		if d, m = 1, m+1; m > 12 {
			m, y = 1, y+1
		}
		if w.used+it.steps > w.max {
			return w.exceeded(fmt.Sprintf("COUNT=%d: counting the occurrences from DTSTART", r.count), "lower COUNT")
		}
	}
	w.spend(it.steps)
	if !any {
		return ErrNoOccurrence
	}
	r.lastWall = min(r.lastWall, last)
	r.lastDay = floorDiv(r.lastWall, secondsPerDay)
	return nil
}

// entries returns the number of entries of the loaded period, after
// BYSETPOS.
func (it *iter) entries() int {
	if len(it.r.setPos)+len(it.r.setNeg) == 0 {
		return it.total
	}
	n := 0
	it.picks(func(int) bool { n++; return true })
	return n
}

// entry returns the wall time of the i-th entry (after BYSETPOS) of the
// loaded period.
func (it *iter) entry(i int) int64 {
	if len(it.r.setPos)+len(it.r.setNeg) == 0 {
		return it.wallAt(i)
	}
	var x int64
	it.picks(func(f int) bool {
		if i == 0 {
			x = it.wallAt(f)
			return false
		}
		i--
		return true
	})
	return x
}

// rank returns the number of entries (after BYSETPOS) of the loaded period
// before the wall time w.
func (it *iter) rank(w int64) int {
	r := it.r
	if len(r.setPos)+len(r.setNeg) > 0 {
		n := 0
		it.picks(func(f int) bool {
			if it.wallAt(f) >= w {
				return false
			}
			n++
			return true
		})
		return n
	}
	if r.freq >= hourly {
		if tod := w - it.base; tod > 0 {
			return r.seekTime(tod)
		}
		return 0
	}
	rel := floorDiv(w, secondsPerDay) - it.base
	if rel <= 0 {
		if rel < 0 {
			return 0
		}
		if bitTest(it.mask[:], 0) {
			return r.seekTime(w - it.base*secondsPerDay)
		}
		return 0
	}
	before := 0
	for i, word := range it.mask {
		lo := int64(i << 6)
		switch {
		case rel >= lo+64:
			before += bits.OnesCount64(word)
		case rel > lo:
			before += bits.OnesCount64(word & (1<<uint(rel-lo) - 1))
		}
	}
	n := before * r.nt
	if bitTest(it.mask[:], rel) {
		n += r.seekTime(w - (it.base+rel)*secondsPerDay)
	}
	return n
}
