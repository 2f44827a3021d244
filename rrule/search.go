package rrule

import (
	"math/bits"
)

// Step costs. A search counts its work in steps: one per period, month or
// slot word it looks at, and fixed amounts for the rest (see cost.go).
// Parse refuses a schedule whose search may take more steps than
// Limits.MaxSteps, so that Next and First stay fast for every accepted
// schedule.
const (
	stepsResolve = 16 // placing a wall time on the time line near a zone change
	stepsZone    = 48 // reading the zone around the asked time
	stepsLoad    = 4  // expanding a period whose days are known
	stepsFirst   = 24 // finding the first entry of a period at or after a wall time

	stepsMonth       = 2 // looking at a MONTHLY period
	stepsWeekByMonth = 3 // looking at a WEEKLY period with BYMONTH
	stepsDay         = 3 // checking a day against the day filter
	stepsScan        = 2 // starting a walk month by month
)

// iter expands the periods of one rule. It lives on the stack of one call.
type iter struct {
	r     *rule
	lim   int64 // no period starting after this day is looked at
	steps int
	fixed int // the part of steps that counts fixed amounts (see search)
	// cap, when not zero, stops active once steps pass it, as if no
	// period were left: Parse sets it to what its budget has left.
	cap int

	k     int64     // the loaded period
	base  int64     // its first day (to DAILY), or its first wall time (HOURLY and finer)
	mask  [6]uint64 // to DAILY: its days that pass, bit i being day base+i
	total int       // its entries, before BYSETPOS
}

// periodOf returns the period that holds the wall time w.
func (r *rule) periodOf(w int64) int64 {
	day := floorDiv(w, secondsPerDay)
	switch r.freq {
	case yearly:
		y, _, _ := civilFromDays(day)
		return floorDiv(int64(y)-r.origin, r.interval)
	case monthly:
		y, m, _ := civilFromDays(day)
		return floorDiv(int64(y)*12+int64(m-1)-r.origin, r.interval)
	case weekly:
		return floorDiv(day-r.origin, 7*r.interval)
	case daily:
		return floorDiv(day-r.origin, r.interval)
	default:
		return floorDiv(floorDiv(w, r.unit)-r.origin, r.interval)
	}
}

// yearShapeOf returns the shape of year y and its first day.
func yearShapeOf(y int) (int, int64) {
	jan1 := daysFromCivil(y, 1, 1)
	return yearShape(weekdayOf(jan1), isLeap(y), isLeap(y-1)), jan1
}

// weekDays returns the days of the week starting on day w that pass, bit
// 0 being day w.
func (r *rule) weekDays(w int64) uint64 {
	if !r.weekByMo {
		return uint64(r.week)
	}
	j, d := monthOf(w)
	sh := cycle.months[j]
	days := uint64(r.months[sh]>>uint(d)) & 0x7f
	if dim := shapeDays(sh); d+6 > dim {
		next := r.months[cycle.months[(j+1)%4800]]
		days |= uint64(next>>1) << uint(dim-d+1) & 0x7f
	}
	return days
}

// dayPasses reports whether day passes the day filter.
func (r *rule) dayPasses(day int64) bool {
	if r.months == nil {
		return true
	}
	j, d := monthOf(day)
	return r.months[cycle.months[j]]&(1<<uint(d)) != 0
}

// passingDay returns day if it passes the day filter, and otherwise the
// first day after it that does, walking month by month, or false past
// it.lim.
func (it *iter) passingDay(day int64) (int64, bool) {
	r := it.r
	if r.months == nil {
		return day, true
	}
	j, d := monthOf(day)
	if r.months[cycle.months[j]]&(1<<uint(d)) != 0 {
		return day, true
	}
	first := day - int64(d-1)
	if dim := shapeDays(cycle.months[j]); d < dim {
		d++
	} else {
		d, first, j = 1, first+int64(dim), (j+1)%4800
	}
	return it.walkMonths(j, d, first)
}

// walkMonths returns the first day from day d of month j of the 400-year
// cycle (an index of cycle.months), whose first day is first, that passes
// the day filter, walking month by month, or false past it.lim.
func (it *iter) walkMonths(j, d int, first int64) (int64, bool) {
	r := it.r
	it.steps += stepsScan
	for {
		it.steps++
		if first > it.lim {
			return 0, false
		}
		sh := cycle.months[j]
		if mm := r.months[sh] >> uint(d) << uint(d); mm != 0 {
			found := first + int64(bits.TrailingZeros32(mm)-1)
			return found, found <= it.lim
		}
		first += int64(shapeDays(sh))
		d = 1
		if j++; j == 4800 {
			j = 0
		}
	}
}

// nextAlignedSlot returns the first allowed slot at or after slot that a
// whole number of intervals separates from it, within the same day
// (HOURLY and finer, INTERVAL shorter than a day).
func (it *iter) nextAlignedSlot(slot int64) (int64, bool) {
	r := it.r
	if r.aligned {
		// Every allowed slot is reachable: the next set bit.
		w := slot >> 6
		if word := r.slots[w] &^ (1<<uint(slot&63) - 1); word != 0 {
			it.steps++
			return w<<6 + int64(bits.TrailingZeros64(word)), true
		}
		// The next word that is not zero.
		for s := w + 1; ; s = s&^63 + 64 {
			it.steps++
			if int(s>>6) >= len(r.slotWords) {
				return 0, false
			}
			if sw := r.slotWords[s>>6] &^ (1<<uint(s&63) - 1); sw != 0 {
				w = s&^63 + int64(bits.TrailingZeros64(sw))
				return w<<6 + int64(bits.TrailingZeros64(r.slots[w])), true
			}
		}
	}
	b := slot
	if b < r.firstSlot {
		b += ceilDiv(r.firstSlot-b, r.interval) * r.interval
	}
	for ; b <= r.lastSlot; b += r.interval {
		it.steps++
		if bitTest(r.slots, b) {
			return b, true
		}
	}
	it.steps++
	return 0, false
}

// nextSetBit returns the first set bit at or after i, or -1.
func nextSetBit(set []uint64, i int64) int64 {
	w := i >> 6
	if i < 0 || int(w) >= len(set) {
		return -1
	}
	word := set[w] &^ (1<<uint(i&63) - 1)
	for {
		if word != 0 {
			return w<<6 + int64(bits.TrailingZeros64(word))
		}
		w++
		if int(w) >= len(set) {
			return -1
		}
		word = set[w]
	}
}

// periodActive reports whether period k of a YEARLY, MONTHLY or WEEKLY
// rule holds an entry (after BYSETPOS), and whether it starts after it.lim
// or year 9999.
func (it *iter) periodActive(k int64) (active, past bool) {
	r := it.r
	switch r.freq {
	case yearly:
		y := r.origin + k*r.interval
		if y > maxYear {
			return false, true
		}
		sh, jan1 := yearShapeOf(int(y))
		return int(r.yearCount[sh])*r.nt >= r.minPick, jan1 > it.lim
	case monthly:
		mi := r.origin + k*r.interval
		if mi > maxYear*12+11 {
			return false, true
		}
		sh, first := monthAt(mi)
		return int(r.monthCount[sh])*r.nt >= r.minPick, first > it.lim
	default:
		w := r.origin + 7*k*r.interval
		return bits.OnesCount64(r.weekDays(w))*r.nt >= r.minPick, w > it.lim
	}
}

// active returns the first period at or after k that holds an entry (after
// BYSETPOS), or false if none starts by it.lim.
func (it *iter) active(k int64) (int64, bool) {
	r := it.r
	switch r.freq {
	case yearly, monthly, weekly:
		// Looking at a month takes a date conversion, at a week two or
		// three: they count as more steps.
		cost := 1
		switch {
		case r.freq == monthly:
			cost = stepsMonth
		case r.weekByMo:
			cost = stepsWeekByMonth
		}
		for ; ; k++ {
			it.steps += cost
			if it.cap > 0 && it.steps > it.cap {
				return 0, false
			}
			if ok, past := it.periodActive(k); past {
				return 0, false
			} else if ok {
				return k, true
			}
		}
	case daily:
		for {
			it.steps++
			day := r.origin + k*r.interval
			if day > it.lim || it.cap > 0 && it.steps > it.cap {
				return 0, false
			}
			if r.months != nil {
				it.steps += stepsDay
			}
			next, ok := it.passingDay(day)
			if ok && next == day {
				return k, true
			}
			if !ok {
				return 0, false
			}
			k = ceilDiv(next-r.origin, r.interval)
		}
	default:
		for {
			it.steps++
			g := r.origin + k*r.interval
			day := floorDiv(g, r.perDay)
			if day > it.lim || it.cap > 0 && it.steps > it.cap {
				return 0, false
			}
			if r.months != nil {
				it.steps += stepsDay
			}
			if next, ok := it.passingDay(day); !ok || next != day {
				if !ok {
					return 0, false
				}
				k = ceilDiv(next*r.perDay-r.origin, r.interval)
				continue
			}
			if r.slots == nil {
				return k, true
			}
			slot := g - day*r.perDay
			if r.interval >= r.perDay {
				if bitTest(r.slots, slot) {
					return k, true
				}
				k++
				continue
			}
			if s, ok := it.nextAlignedSlot(slot); ok {
				return k + (s-slot)/r.interval, true
			}
			k = ceilDiv((day+1)*r.perDay-r.origin, r.interval)
		}
	}
}

// load expands period k, which active returned.
func (it *iter) load(k int64) {
	r := it.r
	it.k, it.steps, it.fixed = k, it.steps+stepsLoad, it.fixed+stepsLoad
	switch r.freq {
	case yearly:
		sh, jan1 := yearShapeOf(int(r.origin + k*r.interval))
		it.base, it.mask, it.total = jan1, r.years[sh], int(r.yearCount[sh])*r.nt
	case monthly:
		sh, first := monthAt(r.origin + k*r.interval)
		mm := r.months[sh]
		it.base, it.mask[0], it.total = first, uint64(mm>>1), bits.OnesCount32(mm)*r.nt
	case weekly:
		it.base = r.origin + 7*k*r.interval
		it.mask[0] = r.weekDays(it.base)
		it.total = bits.OnesCount64(it.mask[0]) * r.nt
	case daily:
		it.base, it.mask[0], it.total = r.origin+k*r.interval, 1, r.nt
	default:
		it.base, it.total = (r.origin+k*r.interval)*r.unit, r.nt
	}
}

// dayAt returns the q-th passing day of the loaded period.
func (it *iter) dayAt(q int) int64 {
	for i, w := range it.mask {
		if c := bits.OnesCount64(w); q >= c {
			q -= c
			continue
		}
		for ; q > 0; q-- {
			w &= w - 1
		}
		return it.base + int64(i<<6+bits.TrailingZeros64(w))
	}
	return it.base
}

// wallAt returns the wall time of entry f (before BYSETPOS) of the loaded
// period.
func (it *iter) wallAt(f int) int64 {
	r := it.r
	if r.freq >= hourly {
		return it.base + r.timeAt(f)
	}
	return it.dayAt(f/r.nt)*secondsPerDay + r.timeAt(f%r.nt)
}

// picks calls yield with the entries BYSETPOS picks in the loaded period,
// ascending and once each, until yield returns false.
func (it *iter) picks(yield func(f int) bool) {
	r, total := it.r, it.total
	i, j := 0, 0
	// Negative positions below -total pick nothing.
	for j < len(r.setNeg) && int(r.setNeg[j]) < -total {
		j++
	}
	last := -1
	for {
		it.steps++
		f := -1
		if i < len(r.setPos) && int(r.setPos[i]) < total {
			f = int(r.setPos[i])
		}
		if j < len(r.setNeg) {
			if g := total + int(r.setNeg[j]); f < 0 || g < f {
				f = g
				j++
			} else if g == f {
				j++
				i++
			} else {
				i++
			}
		} else {
			i++
		}
		if f < 0 {
			return
		}
		if f != last {
			last = f
			if !yield(f) {
				return
			}
		}
	}
}

// first returns the first entry of the loaded period at or after the wall
// time w, or false.
func (it *iter) first(w int64) (int64, bool) {
	r := it.r
	it.steps, it.fixed = it.steps+stepsFirst, it.fixed+stepsFirst
	if len(r.setPos)+len(r.setNeg) > 0 {
		found, ok := int64(0), false
		it.picks(func(f int) bool {
			if x := it.wallAt(f); x >= w {
				found, ok = x, true
				return false
			}
			return true
		})
		return found, ok
	}
	if r.freq >= hourly {
		i := 0
		if tod := w - it.base; tod > 0 {
			i = r.seekTime(tod)
		}
		if i == r.nt {
			return 0, false
		}
		return it.base + r.timeAt(i), true
	}
	rel := floorDiv(w, secondsPerDay) - it.base
	if rel < 0 {
		rel, w = 0, it.base*secondsPerDay
	}
	if bitTest(it.mask[:], rel) {
		day := it.base + rel
		if i := r.seekTime(w - day*secondsPerDay); i < r.nt {
			return day*secondsPerDay + r.timeAt(i), true
		}
	}
	b := nextSetBit(it.mask[:], rel+1)
	if b < 0 {
		return 0, false
	}
	return (it.base+b)*secondsPerDay + r.timeAt(0), true
}

// find returns the first entry of the rule at or after the wall time w,
// looking at no period that starts after it.lim.
func (it *iter) find(w int64) (int64, bool) {
	r := it.r
	k0 := r.periodOf(w)
	for k := k0; ; k++ {
		var ok bool
		if k, ok = it.active(k); !ok {
			return 0, false
		}
		it.load(k)
		if x, ok := it.first(w); ok {
			return x, x <= r.lastWall
		}
		if k != k0 {
			// Only the period holding w can end before it.
			return 0, false
		}
	}
}

// next returns the first occurrence of the rule after z.t, and adds the
// work it took to *steps.
func (r *rule) next(z *zone, steps *int) (int64, bool) {
	x, ok, _ := r.search(z, steps)
	return x, ok
}

// search is next, also returning the part of the steps it added that
// counts fixed amounts (stepsLoad, stepsFirst, stepsResolve) rather than
// periods looked at.
func (r *rule) search(z *zone, steps *int) (int64, bool, int) {
	if z.t >= r.until {
		return 0, false, 0
	}
	it := iter{r: r, lim: r.lastDay}
	best, found := int64(0), false
	if z.gapLo < z.gapHi && z.gapHi > r.start {
		// Wall times in the gap z.t follows stand for instants after it.
		it.lim = min(r.lastDay, floorDiv(z.gapHi, secondsPerDay))
		if w, ok := it.find(max(z.gapLo, r.start)); ok && w < z.gapHi {
			best, found = w-z.gapOff, true
		}
		it.lim = r.lastDay
	}
	if w, ok := it.find(max(z.wall, r.start)); ok {
		x, gapEnd, gapLen := z.resolve(r.loc, w)
		it.steps, it.fixed = it.steps+stepsResolve, it.fixed+stepsResolve
		if gapEnd != 0 {
			// w lies in a later gap and stands for an instant after it:
			// the wall times just after the gap stand for earlier ones.
			it.lim = min(r.lastDay, floorDiv(w+gapLen, secondsPerDay))
			if w2, ok := it.find(gapEnd); ok && w2 < w+gapLen {
				x2, _, _ := z.resolve(r.loc, w2)
				it.steps, it.fixed = it.steps+stepsResolve, it.fixed+stepsResolve
				x = min(x, x2)
			}
		}
		if !found || x < best {
			best, found = x, true
		}
	}
	*steps += it.steps
	if !found || best > r.until {
		return 0, false, it.fixed
	}
	return best, true, it.fixed
}
