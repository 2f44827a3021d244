package rrule

import (
	"math/bits"
	"slices"
	"time"
)

// frequency is FREQ, ordered like rrule-go's and dateutil's constants.
type frequency int

const (
	yearly frequency = iota
	monthly
	weekly
	daily
	hourly
	minutely
	secondly
)

var frequencyNames = [...]string{"YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY"}

func (f frequency) String() string { return frequencyNames[f] }

// nthWeekday is a BYDAY entry with a position, like -1FR.
type nthWeekday struct{ weekday, n int }

// rule is one expanded RRULE. It splits time into periods of
// FREQ×INTERVAL counted in wall time from DTSTART's period (period 0), and
// expands each period the way RFC 5545 3.3.10, rrule-go and
// python-dateutil do: the days of the period that pass the BYxxx filters,
// times the times of day, then BYSETPOS, then DTSTART, UNTIL and COUNT.
// Because a period's occurrences depend only on the period (and on
// DTSTART for period 0), the expansion can start at any period.
type rule struct {
	loc      *time.Location
	freq     frequency
	interval int64
	wkst     int
	count    int
	until    int64 // instant, when hasUntil
	hasUntil bool

	start  int64 // DTSTART, wall time
	origin int64 // DTSTART's period: year, month (y*12+m-1), week-start day, day, or hour/minute/second number

	byMonth      uint16 // bit m
	byMonthDay   uint32 // bit d for d in 1..31
	byNMonthDay  uint32 // bit d for -d
	byYearDay    [6]uint64
	byNYearDay   [6]uint64
	hasYearDay   bool
	byWeekNo     []int
	byWeekday    uint8 // bit per weekday, Monday = 0
	byNWeekday   []nthWeekday
	bySetPos     []int
	hasDayFilter bool // any of BYMONTH, BYDAY without position, BYMONTHDAY, BYYEARDAY

	// times are the sorted offsets of the occurrences inside a day (up to
	// DAILY) or inside a period (HOURLY and finer).
	times []int64

	// For HOURLY, MINUTELY and SECONDLY: the period length, the periods
	// per day, and the bitset of periods of the day (slots) that BYHOUR,
	// BYMINUTE and BYSECOND allow and that INTERVAL can reach from DTSTART;
	// nil when every slot is allowed.
	unit   int64
	perDay int64
	slots  []uint64

	// For COUNT: where to resume counting, and an instant after every
	// occurrence.
	checkpoints []checkpoint
	end         int64
}

// checkpoint says that emitted occurrences precede period k, which starts
// at the wall time start.
type checkpoint struct {
	k       int64
	start   int64
	emitted int
}

func bitTest(set []uint64, i int64) bool {
	return i >= 0 && int(i>>6) < len(set) && set[i>>6]&(1<<uint(i&63)) != 0
}

func bitSet(set []uint64, i int64) {
	set[i>>6] |= 1 << uint(i&63)
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

// dayPasses applies the filters that depend on the day alone: BYMONTH,
// BYDAY without position, BYMONTHDAY and BYYEARDAY. dim and ylen are the
// lengths of the day's month and year; yd is its 1-based day of the year.
func (r *rule) dayPasses(m, d, wd, yd, dim, ylen int) bool {
	if r.byMonth != 0 && r.byMonth&(1<<uint(m)) == 0 {
		return false
	}
	if r.byWeekday != 0 && r.byWeekday&(1<<uint(wd)) == 0 {
		return false
	}
	if r.byMonthDay|r.byNMonthDay != 0 &&
		r.byMonthDay&(1<<uint(d)) == 0 && r.byNMonthDay&(1<<uint(dim-d+1)) == 0 {
		return false
	}
	if r.hasYearDay && !bitTest(r.byYearDay[:], int64(yd)) && !bitTest(r.byNYearDay[:], int64(ylen-yd+1)) {
		return false
	}
	return true
}

// monthDayMask returns the days of a month of dim days that BYMONTHDAY
// allows, as bits 1 to dim: all of them without BYMONTHDAY.
func (r *rule) monthDayMask(dim int) uint32 {
	all := uint32(1)<<uint(dim+1) - 2
	if r.byMonthDay|r.byNMonthDay == 0 {
		return all
	}
	mask := r.byMonthDay & all
	for n := r.byNMonthDay; n != 0; n &= n - 1 {
		if k := bits.TrailingZeros32(n); k <= dim {
			mask |= 1 << uint(dim-k+1)
		}
	}
	return mask
}

// dayOK applies dayPasses to a day number.
func (r *rule) dayOK(day int64) bool {
	if !r.hasDayFilter {
		return true
	}
	y, m, d := civilFromDays(day)
	return r.dayPasses(m, d, weekdayOf(day), yearDay(y, m, d), daysInMonth(y, m), daysInYear(y))
}

// nextPassingDay returns the first day at or after day that passes
// dayPasses, or a day after lim. It walks the calendar month by month,
// skipping the months BYMONTH leaves out.
func (r *rule) nextPassingDay(day, lim int64) int64 {
	if !r.hasDayFilter {
		return day
	}
	y, m, d := civilFromDays(day)
	wd := weekdayOf(day)
	for day <= lim {
		dim := daysInMonth(y, m)
		if r.byMonth == 0 || r.byMonth&(1<<uint(m)) != 0 {
			ylen, yd := daysInYear(y), yearDay(y, m, d)
			for ; d <= dim; d++ {
				if r.dayPasses(m, d, wd, yd, dim, ylen) {
					return day
				}
				day, wd, yd = day+1, (wd+1)%7, yd+1
			}
		} else {
			rest := dim - d + 1
			day, wd = day+int64(rest), (wd+rest)%7
		}
		d = 1
		if m++; m > 12 {
			m, y = 1, y+1
		}
	}
	return lim + 1
}

// nextAllowedMonth returns the first day of the first month after y-m that
// BYMONTH allows (BYMONTH must be set).
func (r *rule) nextAllowedMonth(y, m int) int64 {
	for i := 0; i < 12; i++ {
		if m++; m > 12 {
			m, y = 1, y+1
		}
		if r.byMonth&(1<<uint(m)) != 0 {
			break
		}
	}
	return daysFromCivil(y, m, 1)
}

// periodStart returns the wall time at which period k starts.
func (r *rule) periodStart(k int64) int64 {
	switch r.freq {
	case yearly:
		return daysFromCivil(int(r.origin+k*r.interval), 1, 1) * secondsPerDay
	case monthly:
		mi := r.origin + k*r.interval
		return daysFromCivil(int(floorDiv(mi, 12)), int(floorMod(mi, 12))+1, 1) * secondsPerDay
	case weekly:
		return (r.origin + 7*k*r.interval) * secondsPerDay
	case daily:
		return (r.origin + k*r.interval) * secondsPerDay
	default:
		return (r.origin + k*r.interval) * r.unit
	}
}

// periodOf returns the period that holds the wall time w >= r.start.
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

// candidate returns the first period at or after k that may hold an
// occurrence, skipping cheaply over periods that cannot, or false if it
// starts after the day lim.
func (r *rule) candidate(k, lim int64) (int64, bool) {
	switch r.freq {
	case yearly:
		return k, daysFromCivil(int(min(r.origin+k*r.interval, maxYear+1)), 1, 1) <= lim
	case monthly:
		for {
			mi := r.origin + k*r.interval
			y, m := floorDiv(mi, 12), int(floorMod(mi, 12))+1
			if y > maxYear || daysFromCivil(int(y), m, 1) > lim {
				return 0, false
			}
			if r.byMonth == 0 || r.byMonth&(1<<uint(m)) != 0 {
				return k, true
			}
			k++
		}
	case weekly:
		for {
			first := r.origin + 7*k*r.interval
			if first > lim {
				return 0, false
			}
			if r.byMonth == 0 || k == 0 {
				return k, true
			}
			y1, m1, _ := civilFromDays(first)
			_, m2, _ := civilFromDays(first + 6)
			if r.byMonth&(1<<uint(m1)) != 0 || r.byMonth&(1<<uint(m2)) != 0 {
				return k, true
			}
			next := floorDiv(r.nextAllowedMonth(y1, m1)-r.origin, 7*r.interval)
			k = max(k+1, next)
		}
	case daily:
		for {
			day := r.origin + k*r.interval
			if day > lim {
				return 0, false
			}
			next := r.nextPassingDay(day, lim)
			if next == day {
				return k, true
			}
			k = ceilDiv(next-r.origin, r.interval)
		}
	default:
		for {
			g := r.origin + k*r.interval
			day := floorDiv(g, r.perDay)
			if day > lim {
				return 0, false
			}
			if next := r.nextPassingDay(day, lim); next != day {
				k = ceilDiv(next*r.perDay-r.origin, r.interval)
				continue
			}
			if r.slots == nil {
				return k, true
			}
			slot := g - day*r.perDay
			if s, ok := r.nextSlot(slot); ok {
				return k + (s-slot)/r.interval, true
			}
			k = ceilDiv((day+1)*r.perDay-r.origin, r.interval)
		}
	}
}

// nextSlot returns the first allowed slot at or after slot that lies a
// whole number of intervals after it, within the same day.
func (r *rule) nextSlot(slot int64) (int64, bool) {
	if r.interval >= r.perDay {
		return slot, bitTest(r.slots, slot)
	}
	for b := nextSetBit(r.slots, slot); b >= 0; b = nextSetBit(r.slots, b+1) {
		if (b-slot)%r.interval == 0 {
			return b, true
		}
	}
	return 0, false
}

// markNth sets mask[i] for the days i in [first, last] picked by the
// positioned BYDAY entries, counting from first or, for negative
// positions, back from last. wdFirst is the weekday of day first. The
// arithmetic is dateutil's.
func (r *rule) markNth(mask []bool, first, last, wdFirst int) {
	wd := func(i int) int { return int(floorMod(int64(wdFirst+i-first), 7)) }
	for _, x := range r.byNWeekday {
		var i int
		if x.n < 0 {
			i = last + (x.n+1)*7
			i -= int(floorMod(int64(wd(i)-x.weekday), 7))
		} else {
			i = first + (x.n-1)*7
			i += int(floorMod(int64(7-wd(i)+x.weekday), 7))
		}
		if first <= i && i <= last {
			mask[i] = true
		}
	}
}

// weekNoMask sets mask[i] for the days i of year y (0 = January 1st) that
// BYWEEKNO picks, with weeks starting on WKST as RFC 5545 3.3.10 defines
// them. This is dateutil's algorithm, quirks included.
func (r *rule) weekNoMask(mask []bool, y int, wd0, ylen int) {
	wkst := r.wkst
	wd := func(i int) int { return (wd0 + i) % 7 }
	firstwkst := int(floorMod(int64(7-wd0+wkst), 7))
	no1wkst := firstwkst
	var wyearlen int
	if no1wkst >= 4 {
		no1wkst = 0
		wyearlen = ylen + int(floorMod(int64(wd0-wkst), 7))
	} else {
		wyearlen = ylen - no1wkst
	}
	numweeks := wyearlen/7 + (wyearlen%7)/4
	markWeek := func(i int) {
		for j := 0; j < 7; j++ {
			mask[i] = true
			i++
			if wd(i) == wkst {
				break
			}
		}
	}
	has := func(n int) bool {
		for _, v := range r.byWeekNo {
			if v == n {
				return true
			}
		}
		return false
	}
	for _, n := range r.byWeekNo {
		if n < 0 {
			n += numweeks + 1
		}
		if n <= 0 || n > numweeks {
			continue
		}
		i := no1wkst
		if n > 1 {
			i = no1wkst + (n-1)*7
			if no1wkst != firstwkst {
				i -= 7 - firstwkst
			}
		}
		markWeek(i)
	}
	if has(1) {
		// Week 1 of next year may start in this one.
		i := no1wkst + numweeks*7
		if no1wkst != firstwkst {
			i -= 7 - firstwkst
		}
		if i < ylen {
			markWeek(i)
		}
	}
	if no1wkst != 0 {
		// The days before week 1 belong to last year's last week.
		lnumweeks := -1
		if !has(-1) {
			lwd0 := weekdayOf(daysFromCivil(y-1, 1, 1))
			lno1wkst := int(floorMod(int64(7-lwd0+wkst), 7))
			lylen := daysInYear(y - 1)
			if lno1wkst >= 4 {
				lnumweeks = 52 + (lylen+int(floorMod(int64(lwd0-wkst), 7)))%7/4
			} else {
				lnumweeks = 52 + int(floorMod(int64(ylen-no1wkst), 7))/4
			}
		}
		if has(lnumweeks) {
			for i := 0; i < no1wkst; i++ {
				mask[i] = true
			}
		}
	}
}

// iter walks the occurrences of a rule, as wall times, period by period.
// It lives on the stack of one call, so it holds arrays, not slices into
// itself.
type iter struct {
	r       *rule
	lim     int64 // last day at which a period may start
	k       int64 // current period
	emitted int   // occurrences so far, counted from DTSTART (COUNT rules)
	done    bool

	days  [372]int64 // days of the current period that pass the filters
	nDays int
	base  int64 // HOURLY and finer: wall time at which the period starts
	// BYSETPOS: chosen entries of the period, ascending, in sel[:nSel]
	// or, when there are more, in selMore.
	sel     [16]int
	nSel    int
	selMore []int
	n, j    int // entries in the period, next entry

	mask1 [380]bool
	mask2 [380]bool
}

func (it *iter) addDay(day int64) {
	it.days[it.nDays] = day
	it.nDays++
}

// load expands period k; false past year 9999.
func (it *iter) load(k int64) bool {
	r := it.r
	it.k, it.j, it.n, it.nDays = k, 0, 0, 0
	total := 0
	switch r.freq {
	case yearly:
		y := r.origin + k*r.interval
		if y > maxYear || daysFromCivil(int(y), 1, 1) > it.lim {
			return false
		}
		it.yearDays(int(y))
		total = it.nDays * len(r.times)
	case monthly:
		mi := r.origin + k*r.interval
		y, m := int(floorDiv(mi, 12)), int(floorMod(mi, 12))+1
		if y > maxYear || daysFromCivil(y, m, 1) > it.lim {
			return false
		}
		it.monthDays(y, m)
		total = it.nDays * len(r.times)
	case weekly:
		first := r.origin + 7*k*r.interval
		if first > it.lim {
			return false
		}
		it.weekDays(first, first+7)
		total = it.nDays * len(r.times)
	case daily:
		day := r.origin + k*r.interval
		if day > it.lim {
			return false
		}
		if r.dayOK(day) {
			it.addDay(day)
		}
		total = it.nDays * len(r.times)
	default:
		g := r.origin + k*r.interval
		day := floorDiv(g, r.perDay)
		if day > it.lim {
			return false
		}
		it.base = g * r.unit
		if (r.slots == nil || bitTest(r.slots, g-day*r.perDay)) && r.dayOK(day) {
			total = len(r.times)
		}
	}
	if len(r.bySetPos) == 0 || total == 0 {
		it.n = total
		return true
	}
	// Pick the positions, sorted and unique, into sel or selMore.
	it.nSel, it.selMore = 0, nil
	for _, p := range r.bySetPos {
		f := p - 1
		if p < 0 {
			f = total + p
		}
		if f < 0 || f >= total {
			continue
		}
		if it.selMore == nil && it.nSel == len(it.sel) {
			it.selMore = append([]int(nil), it.sel[:]...)
		}
		if it.selMore != nil {
			it.selMore = append(it.selMore, f)
		} else {
			it.sel[it.nSel] = f
			it.nSel++
		}
	}
	if it.selMore != nil {
		slices.Sort(it.selMore)
		it.selMore = slices.Compact(it.selMore)
		it.n = len(it.selMore)
		return true
	}
	chosen := it.sel[:it.nSel]
	slices.Sort(chosen)
	it.n = len(slices.Compact(chosen))
	return true
}

func (it *iter) yearDays(y int) {
	r := it.r
	jan1 := daysFromCivil(y, 1, 1)
	wd0 := weekdayOf(jan1)
	ylen := daysInYear(y)
	useWeekNo := len(r.byWeekNo) > 0
	if useWeekNo {
		clear(it.mask1[:])
		r.weekNoMask(it.mask1[:], y, wd0, ylen)
	}
	useNth := len(r.byNWeekday) > 0
	if useNth {
		clear(it.mask2[:])
		if r.byMonth != 0 {
			for m := 1; m <= 12; m++ {
				if r.byMonth&(1<<uint(m)) != 0 {
					first := yearDay(y, m, 1) - 1
					r.markNth(it.mask2[:], first, first+daysInMonth(y, m)-1, (wd0+first)%7)
				}
			}
		} else {
			r.markNth(it.mask2[:], 0, ylen-1, wd0)
		}
	}
	for m := 1; m <= 12; m++ {
		if r.byMonth != 0 && r.byMonth&(1<<uint(m)) == 0 {
			continue
		}
		first := yearDay(y, m, 1) - 1
		dim := daysInMonth(y, m)
		for days := r.monthDayMask(dim); days != 0; days &= days - 1 {
			d := bits.TrailingZeros32(days)
			i := first + d - 1
			if useWeekNo && !it.mask1[i] || useNth && !it.mask2[i] {
				continue
			}
			if r.dayPasses(m, d, (wd0+i)%7, i+1, dim, ylen) {
				it.addDay(jan1 + int64(i))
			}
		}
	}
}

// weekDays adds the days in [first, end) that pass the filters.
func (it *iter) weekDays(first, end int64) {
	r := it.r
	if !r.hasDayFilter {
		for day := first; day < end; day++ {
			it.addDay(day)
		}
		return
	}
	y, m, d := civilFromDays(first)
	wd, yd := weekdayOf(first), yearDay(y, m, d)
	dim, ylen := daysInMonth(y, m), daysInYear(y)
	for day := first; day < end; day++ {
		if r.dayPasses(m, d, wd, yd, dim, ylen) {
			it.addDay(day)
		}
		d, wd, yd = d+1, (wd+1)%7, yd+1
		if d > dim {
			if d, m = 1, m+1; m > 12 {
				m, y, yd = 1, y+1, 1
				ylen = daysInYear(y)
			}
			dim = daysInMonth(y, m)
		}
	}
}

func (it *iter) monthDays(y, m int) {
	r := it.r
	if r.byMonth != 0 && r.byMonth&(1<<uint(m)) == 0 {
		return
	}
	first := daysFromCivil(y, m, 1)
	wd1 := weekdayOf(first)
	dim, ylen, yd1 := daysInMonth(y, m), daysInYear(y), yearDay(y, m, 1)
	useNth := len(r.byNWeekday) > 0
	if useNth {
		clear(it.mask2[:dim])
		r.markNth(it.mask2[:], 0, dim-1, wd1)
	}
	for days := r.monthDayMask(dim); days != 0; days &= days - 1 {
		d := bits.TrailingZeros32(days)
		if useNth && !it.mask2[d-1] {
			continue
		}
		if r.dayPasses(m, d, (wd1+d-1)%7, yd1+d-1, dim, ylen) {
			it.addDay(first + int64(d-1))
		}
	}
}

// wallAt returns entry j of the current period.
func (it *iter) wallAt(j int) int64 {
	r := it.r
	if len(r.bySetPos) > 0 {
		if it.selMore != nil {
			j = it.selMore[j]
		} else {
			j = it.sel[j]
		}
	}
	if r.freq >= hourly {
		return it.base + r.times[j]
	}
	nt := len(r.times)
	return it.days[j/nt]*secondsPerDay + r.times[j%nt]
}

// advance loads the first non-empty period at or after k.
func (it *iter) advance(k int64) bool {
	for {
		var ok bool
		if k, ok = it.r.candidate(k, it.lim); !ok || !it.load(k) {
			it.done = true
			return false
		}
		if it.n > 0 {
			return true
		}
		k++
	}
}

// next returns the next occurrence.
func (it *iter) next() (int64, bool) {
	r := it.r
	for !it.done {
		for it.j < it.n {
			w := it.wallAt(it.j)
			it.j++
			if w < r.start {
				continue
			}
			if r.count > 0 {
				if it.emitted >= r.count {
					it.done = true
					return 0, false
				}
				it.emitted++
			}
			return w, true
		}
		it.advance(it.k + 1)
	}
	return 0, false
}

// seek moves to the first entry of the current period at or after w.
func (it *iter) seek(w int64) {
	lo, hi := it.j, it.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if it.wallAt(mid) < w {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	it.j = lo
}

// periodCost roughly weighs expanding one period against emitting one
// occurrence, to space COUNT checkpoints.
var periodCost = [...]int{yearly: 64, monthly: 16, weekly: 8, daily: 2, hourly: 1, minutely: 1, secondly: 1}

// checkpointSpacing is the initial cost between checkpoints; it doubles
// whenever a rule reaches maxCheckpoints, which bounds a rule's memory.
const (
	checkpointSpacing = 64
	maxCheckpoints    = 1 << 14
)

// cycleEnd returns the last day at which a period must be expanded to know
// whether the rule occurs at all. Periods after the first repeat, calendar
// and all, once both the Gregorian cycle (400 years: 146097 days, 20871
// weeks, 4800 months) and FREQ×INTERVAL have come round; so if none of
// them occurs before then, none ever does.
func (r *rule) cycleEnd() int64 {
	const cycle = 146097
	i := r.interval
	var days, period int64
	switch r.freq {
	case yearly:
		days, period = i/gcd(400, i)*cycle, 366*i
	case monthly:
		days, period = i/gcd(4800, i)*cycle, 31*i
	case weekly:
		days, period = 7*i/gcd(cycle, 7*i)*cycle, 7*i
	case daily:
		days, period = i/gcd(cycle, i)*cycle, i
	default:
		secs := i * r.unit
		days, period = secs/gcd(cycle*secondsPerDay, secs)*cycle, secs/secondsPerDay+1
	}
	return min(floorDiv(r.start, secondsPerDay)+days+period+7, maxDay)
}

// exists reports whether the rule has any occurrence.
func (r *rule) exists() bool {
	it := iter{r: r, lim: r.cycleEnd()}
	if !it.advance(0) {
		return false
	}
	for {
		w, ok := it.next()
		if !ok {
			return false
		}
		x := resolve(r.loc, w)
		if !r.hasUntil || x.unix <= r.until {
			return true
		}
		if x.gapEnd == 0 {
			// Later occurrences are later still.
			return false
		}
	}
}

// walkCount walks a COUNT rule once from DTSTART, records checkpoints and
// the end, and reports whether the rule has any occurrence.
func (r *rule) walkCount() bool {
	it := iter{r: r, lim: r.cycleEnd()}
	spacing := checkpointSpacing
	cost := spacing
	last, any := int64(0), false
	for ok := it.advance(0); ok && it.emitted < r.count; ok = it.advance(it.k + 1) {
		if cost >= spacing {
			if len(r.checkpoints) == maxCheckpoints {
				// Keep every other one.
				for i := range maxCheckpoints / 2 {
					r.checkpoints[i] = r.checkpoints[2*i]
				}
				r.checkpoints = r.checkpoints[:maxCheckpoints/2]
				spacing *= 2
			}
			r.checkpoints = append(r.checkpoints, checkpoint{k: it.k, start: r.periodStart(it.k), emitted: it.emitted})
			cost = 0
		}
		cost += periodCost[r.freq] + it.n
		for it.j < it.n && it.emitted < r.count {
			w := it.wallAt(it.j)
			it.j++
			if w >= r.start {
				it.emitted++
				last, any = w, true
				it.lim = maxDay // it occurs: walk on to the end
			}
		}
	}
	r.checkpoints = slices.Clip(r.checkpoints)
	// An occurrence in a gap can stand for an instant up to a gap's
	// length after the last wall time's instant.
	r.end = resolve(r.loc, last).unix + 2*secondsPerDay
	return any
}

// next returns the first occurrence of the rule strictly after the instant
// t (Unix seconds).
func (r *rule) next(t int64) (int64, bool) {
	if r.hasUntil && t >= r.until || r.count > 0 && t >= r.end {
		return 0, false
	}
	// Every wall time standing for an instant after t is at or after s.
	s := wallLowerBound(r.loc, t)
	it := iter{r: r, lim: maxDay}
	switch {
	case r.count > 0:
		// Resume counting at the last checkpoint at or before s.
		lo, hi := 0, len(r.checkpoints)
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if r.checkpoints[mid].start <= s {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		cp := r.checkpoints[max(lo-1, 0)]
		it.emitted = cp.emitted
		if !it.advance(cp.k) {
			return 0, false
		}
	case s <= r.start:
		if !it.advance(0) {
			return 0, false
		}
	default:
		k := r.periodOf(s)
		if !it.advance(k) {
			return 0, false
		}
		if it.k == k {
			it.seek(s)
		}
	}
	// Wall times map to instants in increasing order, except that one in
	// a gap stands for an instant up to the gap's length later than its
	// neighbours: so keep looking until a wall time that exists.
	var best, gapEnd int64
	found := false
	for {
		w, ok := it.next()
		if !ok {
			break
		}
		if w < s || found && w < gapEnd {
			continue
		}
		x := resolve(r.loc, w)
		if r.hasUntil && x.unix > r.until {
			if x.gapEnd == 0 {
				break
			}
			continue
		}
		if x.unix <= t {
			continue
		}
		if !found || x.unix < best {
			best, found = x.unix, true
		}
		if x.gapEnd == 0 {
			break
		}
		gapEnd = x.gapEnd
	}
	return best, found
}
