package rrule

import (
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
// The fuzz test checks that no search exceeds its bound.

// work bounds what Parse may spend on checking rules.
type work struct {
	lim   *Limits
	sim   int // steps left for walking rules over their cycle
	count int // steps left for walking COUNT rules
	exdat int // steps left for checking EXDATEs
}

func newWork(lim *Limits) *work {
	return &work{lim: lim, sim: 8 * lim.MaxSteps, count: 16 * lim.MaxCount, exdat: 64 * lim.MaxSteps}
}

// cycleMonths lists, for the 4,800 months of a 400-year cycle from
// January 2000, each month's shape.
var cycleMonths = sync.OnceValue(func() *[4800]uint8 {
	var out [4800]uint8
	first := daysFromCivil(2000, 1, 1)
	for i := range out {
		y, m := 2000+i/12, i%12+1
		out[i] = uint8(monthShape(m, isLeap(y), weekdayOf(first)))
		first += int64(daysInMonth(y, m))
	}
	return &out
})

// emptyMonths returns the longest run of months without a passing day,
// over the cycle (a run may wrap around it), or false if no month has one.
func (r *rule) emptyMonths() (int, bool) {
	cm := cycleMonths()
	longest, run, lead, seen := 0, 0, 0, false
	for _, sh := range cm {
		if r.months[sh] == 0 {
			run++
			continue
		}
		if !seen {
			lead, seen = run, true
		}
		longest, run = max(longest, run), 0
	}
	return max(longest, run+lead), seen
}

// shortestRun reports whether every run of consecutive passing days is at
// least n days long.
func (r *rule) shortestRun(n int) bool {
	cm := cycleMonths()
	run, lead := 0, -1 // lead: the run that starts the cycle, once closed
	atStart := true    // the current run started with the cycle
	for i, sh := range cm {
		dim := daysInMonth(2000+i/12, i%12+1)
		m := uint64(r.months[sh] >> 1) // bit d-1 for day d
		for pos := 0; pos < dim; {
			rest := m >> uint(pos)
			if rest&1 != 0 {
				ones := min(bits.TrailingZeros64(^rest), dim-pos)
				run, pos = run+ones, pos+ones
				continue
			}
			if atStart {
				lead, atStart = run, false
			} else if run > 0 && run < n {
				return false
			}
			run = 0
			if rest == 0 {
				break
			}
			pos += bits.TrailingZeros64(rest)
		}
	}
	if atStart {
		return true // every day passes
	}
	// The run at the end continues into the one at the start.
	run += lead
	return run == 0 || run >= n
}

// cycleStart is the first day of the 400-year cycle of cycleMonths.
var cycleStart = daysFromCivil(2000, 1, 1)

// cycleDays returns the days of the 400-year cycle from cycleStart that
// pass the rule's month table, as a bitset.
func (r *rule) cycleDays() []uint64 {
	days := make([]uint64, (146097+63)/64+1)
	at := 0
	for i, sh := range cycleMonths() {
		m := uint64(r.months[sh] >> 1) // bit d-1 for day d
		days[at>>6] |= m << uint(at&63)
		if at&63 != 0 {
			days[at>>6+1] |= m >> uint(64-at&63)
		}
		at += daysInMonth(2000+i/12, i%12+1)
	}
	return days
}

// weekCount returns how many of the 7 days from day i of the cycle pass.
func weekCount(days []uint64, i int64) int {
	if i+7 > 146097 {
		n := 0
		for d := range int64(7) {
			if bitTest(days, (i+d)%146097) {
				n++
			}
		}
		return n
	}
	word := days[i>>6] >> uint(i&63)
	if i&63 > 57 {
		word |= days[i>>6+1] << uint(64-i&63)
	}
	return bits.OnesCount64(word & 0x7f)
}

// periodRuns returns the longest run of periods without an entry among
// periods 0 to n-1 (YEARLY, MONTHLY, WEEKLY), counting a run that wraps
// around when wrap is set, or false if none of them has an entry.
func (r *rule) periodRuns(n int64, wrap bool) (int64, bool) {
	it := iter{r: r, lim: maxDay}
	var days []uint64
	var at, step int64 // WEEKLY: the week's first day in the cycle, and the step
	if r.weekByMo {
		days = r.cycleDays()
		at, step = floorMod(r.origin-cycleStart, 146097), 7*r.interval%146097
	}
	var longest, run, lead int64
	seen := false
	for k := int64(0); k < n; k++ {
		var ok, past bool
		if days != nil {
			// As periodActive, from the days of the cycle.
			ok, past = weekCount(days, at)*r.nt >= r.minPick, r.origin+7*k*r.interval > maxDay
			if at += step; at >= 146097 {
				at -= 146097
			}
		} else {
			ok, past = it.periodActive(k)
		}
		if past {
			break
		}
		if !ok {
			run++
			continue
		}
		if !seen {
			lead, seen = run, true
		}
		longest, run = max(longest, run), 0
	}
	if wrap {
		run += lead
	}
	return max(longest, run), seen
}

// analyze computes r.bound, the steps one search of the rule may take, and
// for a COUNT rule its last occurrence. w accounts for Parse's work.
func (r *rule) analyze(w *work) error {
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
		run, ok := r.periodRuns(min(n, cycle), n > cycle)
		if !ok {
			return noOcc()
		}
		return (int(run) + 2) * cost, nil
	}
	scan, day := 0, 1 // one nextPassingDay; one iteration of active
	if r.months != nil {
		e, ok := r.emptyMonths()
		if !ok {
			return noOcc()
		}
		scan, day = stepsScan+e+2, 1+stepsDay
	}
	slot := r.slotScan()
	switch {
	case r.freq == daily && (r.months == nil || r.interval == 1 || r.shortestRun(int(r.interval))):
		// A passing day, or the first aligned day of the next run of
		// passing days, which holds one.
		return 2*day + scan, nil
	case r.freq == daily:
	case r.interval < r.perDay && (r.slots == nil || r.aligned || r.everyDayReaches()):
		// Every passing day has an allowed slot INTERVAL reaches: at
		// worst the rest of this day, then the next passing day.
		return 3*day + scan + 2*slot, nil
	case r.interval >= r.perDay && r.slots == nil &&
		(r.months == nil || r.shortestRun(int(ceilDiv(r.interval, r.perDay)))):
		return 2*day + scan, nil
	}
	return r.simulate(w, scan)
}

// everyDayReaches reports, for HOURLY and finer with an INTERVAL shorter
// than a day that does not divide it, whether every day has an allowed
// slot that INTERVAL reaches. Day d reaches the slots congruent to
// origin-d*perDay modulo INTERVAL.
func (r *rule) everyDayReaches() bool {
	i := r.interval
	c := floorMod(r.origin, i)
	if r.nSlots <= int(r.perDay/i) {
		// Few slots: mark the classes they fall in.
		good := make([]uint64, (i+63)/64)
		for b := nextSetBit(r.slots, 0); b >= 0; b = nextSetBit(r.slots, b+1) {
			bitSet(good, b%i)
		}
		for range i / gcd(i, r.perDay) {
			if !bitTest(good, c) {
				return false
			}
			c = floorMod(c-r.perDay, i)
		}
		return true
	}
	// Many: walk each class until a slot.
	for range i / gcd(i, r.perDay) {
		b := c
		for ; b < r.perDay && !bitTest(r.slots, b); b += i {
		}
		if b >= r.perDay {
			return false
		}
		c = floorMod(c-r.perDay, i)
	}
	return true
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
		it.steps = 0
		got, ok := it.active(k)
		most = max(most, it.steps)
		if w.sim -= it.steps; w.sim < 0 {
			return 0, limitErrorf("MaxSteps", "finding an occurrence may take long: checking how long needs more than %d steps (8 × Limits.MaxSteps); simplify the rule",
				8*w.lim.MaxSteps)
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

// walkCount walks a COUNT rule from DTSTART to its COUNT-th occurrence
// and ends the rule there.
func (r *rule) walkCount(w *work) error {
	it := iter{r: r, lim: r.lastDay}
	emitted := 0
	last, any := int64(0), false
	for k := int64(0); ; k++ {
		var ok bool
		if k, ok = it.active(k); !ok {
			break
		}
		it.load(k)
		from := 0 // entries before DTSTART do not count
		if k == 0 {
			from = it.rank(r.start)
		}
		n := it.entries() - from
		if n > 0 && emitted+n >= r.count {
			last, any = it.entry(from+r.count-emitted-1), true
			emitted = r.count
			break
		}
		if n > 0 {
			last, any = it.entry(from+n-1), true
			emitted += n
		}
		if it.steps > w.count {
			return limitErrorf("MaxCount", "COUNT=%d: counting the occurrences from DTSTART takes more than %d steps (16 × Limits.MaxCount); lower COUNT",
				r.count, 16*w.lim.MaxCount)
		}
	}
	w.count -= it.steps
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
