package rrule

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
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

// Shapes. Whether a day passes the day filters (BYMONTH, BYDAY,
// BYMONTHDAY, BYYEARDAY, BYWEEKNO) depends only on the shape of its month
// (which month, whether the year is a leap year, the weekday of the 1st)
// or, for FREQ=YEARLY, of its year (leap year, weekday of 1 January,
// whether the year before was a leap year, for BYWEEKNO). So a rule
// computes, once, the passing days of each of the 168 month shapes and 28
// year shapes, and finds the days of any period with a table lookup.
const (
	monthShapes = 12 * 2 * 7
	yearShapes  = 7 * 2 * 2
)

func monthShape(m int, leap bool, wd1 int) int {
	s := (m - 1) * 2
	if leap {
		s++
	}
	return s*7 + wd1
}

func yearShape(wd0 int, leap, prevLeap bool) int {
	s := wd0 * 4
	if leap {
		s += 2
	}
	if prevLeap {
		s++
	}
	return s
}

// rule is one RRULE ready for searching. It splits time into periods of
// FREQ×INTERVAL counted in wall time from DTSTART's period (period 0), and
// expands each period as RFC 5545 3.3.10 says: the days of the period that
// pass the BYxxx filters, times the times of day, then BYSETPOS over the
// whole period, then DTSTART, UNTIL and COUNT. A period's occurrences
// depend only on the period, so a search can start at any period.
type rule struct {
	loc      *time.Location
	freq     frequency
	interval int64
	wkst     int

	start    int64 // DTSTART, wall time
	startDay int64
	origin   int64 // DTSTART's period: year, month (y*12+m-1), week-start day, day, or unit (HOURLY and finer)
	// No occurrence has a wall time after lastWall (year 9999, or COUNT's
	// last occurrence) nor an instant after until (UNTIL).
	lastWall int64
	lastDay  int64 // no period starting after this day holds an occurrence
	until    int64 // math.MaxInt64 without UNTIL
	count    int

	// months[monthShape] holds the days (bits 1 to 31) of a month of
	// that shape that pass BYMONTH, BYDAY (with a position only when it
	// counts within the month), BYMONTHDAY and BYYEARDAY; nil when every
	// day passes (DAILY and finer without a day filter).
	months     *[monthShapes]uint32
	monthCount *[monthShapes]uint8
	// years[yearShape] (FREQ=YEARLY) holds the days of a year (bit 0 is 1
	// January) that pass every day filter, BYWEEKNO and year-relative
	// BYDAY positions included.
	years     *[yearShapes][6]uint64
	yearCount *[yearShapes]uint16
	// week (FREQ=WEEKLY) holds the days of every week that pass BYDAY,
	// bit 0 being WKST's day; with BYMONTH (weekByMo), the month tables
	// say which of them a week has.
	week     uint8
	weekByMo bool // WEEKLY with BYMONTH: a week's days come from months

	// BYSETPOS for YEARLY, MONTHLY and WEEKLY: setPos holds p-1 for the
	// positive positions, ascending; setNeg the negative ones, ascending.
	// A period has an occurrence iff it has at least minPick entries.
	setPos, setNeg []int32
	minPick        int

	// The times of day (to DAILY) or offsets in the period (HOURLY and
	// finer): every combination of hours, minutes and seconds, or picked
	// (BYSETPOS for DAILY and finer, which picks the same ones every
	// period). nt is their number.
	hours, minutes, seconds []int32
	picked                  []int32
	nt                      int

	// HOURLY, MINUTELY and SECONDLY: the period length, the periods per
	// day, and the periods of the day (slots) that BYHOUR, BYMINUTE and
	// BYSECOND allow and INTERVAL can reach on some day; nil when every
	// slot is allowed. aligned reports whether INTERVAL divides the day,
	// so that every day reaches the same slots.
	unit      int64
	perDay    int64
	slots     []uint64
	slotWords []uint64 // bit w set when slots[w] is not zero
	nSlots    int
	aligned   bool
	// firstSlot and lastSlot are the first and last allowed slots;
	// strides bounds how many steps of INTERVAL a search within a day
	// takes between them to reach an allowed slot or pass the last, when
	// INTERVAL does not divide the day.
	firstSlot, lastSlot int64
	strides             int

	// weekdays reports whether the day filter depends on the weekday only
	// (BYDAY without position), so the days that pass repeat every week.
	weekdays bool

	// bound is the work (in steps, see cost.go) one search may take.
	bound int
}

// filter holds the day parts of a rule as sets. It is comparable, so that
// rules with the same filter share their tables.
type filter struct {
	byMonth     uint16 // bit m
	byWeekday   uint8  // bit per weekday, Monday = 0
	byMonthDay  uint32 // bit d for d in 1..31
	byNMonthDay uint32 // bit d for -d
	byYearDay   [6]uint64
	byNYearDay  [6]uint64
	hasYearDay  bool
	// nth holds the BYDAY entries with a position, two bytes each: the
	// weekday and the position (int8), in increasing order.
	nth        string
	nthInMonth bool      // positions count within the month (MONTHLY, or YEARLY with BYMONTH)
	weekNo     [2]uint64 // BYWEEKNO: bit n for n in 1..53 in [0], for -n in [1]
	wkst       int       // only with BYWEEKNO, 0 otherwise
	yearly     bool      // whether the year tables are wanted
}

func (f *filter) any() bool {
	return f.byMonth != 0 || f.byWeekday != 0 || f.byMonthDay|f.byNMonthDay != 0 || f.hasYearDay ||
		f.nth != "" || f.hasWeekNo()
}

func (f *filter) hasWeekNo() bool { return f.weekNo != [2]uint64{} }

// weekdaysOnly reports whether the filter depends on the weekday only
// (BYDAY without position), so that the days that pass repeat every week.
func (f *filter) weekdaysOnly() bool {
	return f.byMonth == 0 && f.byMonthDay|f.byNMonthDay == 0 && !f.hasYearDay && f.nth == "" && !f.hasWeekNo()
}

// eachNth calls fn with each BYDAY entry with a position.
func (f *filter) eachNth(fn func(weekday, n int)) {
	for i := 0; i+1 < len(f.nth); i += 2 {
		fn(int(f.nth[i]), int(int8(f.nth[i+1])))
	}
}

// hasWeekNoValue reports whether BYWEEKNO holds n.
func (f *filter) hasWeekNoValue(n int) bool {
	if n < 0 {
		return n >= -53 && f.weekNo[1]&(1<<uint(-n)) != 0
	}
	return n <= 53 && f.weekNo[0]&(1<<uint(n)) != 0
}

func bitTest(set []uint64, i int64) bool {
	return i >= 0 && int(i>>6) < len(set) && set[i>>6]&(1<<uint(i&63)) != 0
}

func bitSet(set []uint64, i int64) {
	set[i>>6] |= 1 << uint(i&63)
}

// bits32 returns the 32 bits of set from bit lo (0 <= lo), zero past its
// end.
func bits32(set *[6]uint64, lo int) uint32 {
	w, sh := lo>>6, uint(lo&63)
	if w >= len(set) {
		return 0
	}
	v := set[w] >> sh
	if sh > 32 && w+1 < len(set) {
		v |= set[w+1] << (64 - sh)
	}
	return uint32(v)
}

// weekdayDays[wd1][set] holds the days (bits 1 to 31) of a month whose
// 1st is a wd1 that fall on a weekday of set (bit per weekday).
var weekdayDays = func() (out [7][128]uint32) {
	for wd1 := range 7 {
		var of [7]uint32
		for d := 1; d <= 31; d++ {
			of[(wd1+d-1)%7] |= 1 << uint(d)
		}
		for set := range 128 {
			for wd := range 7 {
				if set&(1<<uint(wd)) != 0 {
					out[wd1][set] |= of[wd]
				}
			}
		}
	}
	return out
}()

// monthMask returns the days (bits 1 to dim) of a month of the shape (m,
// leap, wd1) that pass f.
func (f *filter) monthMask(m int, leap bool, wd1 int) uint32 {
	if f.byMonth != 0 && f.byMonth&(1<<uint(m)) == 0 {
		return 0
	}
	dim := cumulativeDays[m] - cumulativeDays[m-1]
	ylen, yd1 := 365, cumulativeDays[m-1]+1
	if leap {
		ylen++
		if m == 2 {
			dim++
		}
		if m > 2 {
			yd1++
		}
	}
	mask := uint32(1)<<uint(dim+1) - 2
	if f.byWeekday != 0 {
		mask &= weekdayDays[wd1][f.byWeekday]
	}
	if f.byMonthDay|f.byNMonthDay != 0 {
		// Bit j of byNMonthDay is day dim-j+1.
		neg := uint32(uint64(bits.Reverse32(f.byNMonthDay)) << 1 >> uint(31-dim))
		mask &= f.byMonthDay | neg
	}
	if f.hasYearDay {
		// Day d is day yd1+d-1 of the year, and day ylen-yd1-d+2 from
		// its end.
		pos := bits32(&f.byYearDay, yd1-1)
		lo := ylen - yd1 - dim + 2 // from the end, of day dim
		neg := bits.Reverse32(bits32(&f.byNYearDay, lo)) >> uint(31-dim)
		mask &= pos | neg
	}
	if f.nthInMonth && f.nth != "" {
		var nth uint32
		f.markNth(func(i int) { nth |= 1 << uint(i+1) }, 0, dim-1, wd1)
		mask &= nth
	}
	return mask
}

// markNth calls set(i) for the days i in [first, last] picked by the
// positioned BYDAY entries, counting from first or, for negative
// positions, back from last. wdFirst is the weekday of day first. The
// arithmetic is dateutil's.
func (f *filter) markNth(set func(int), first, last, wdFirst int) {
	wd := func(i int) int { return int(floorMod(int64(wdFirst+i-first), 7)) }
	f.eachNth(func(weekday, n int) {
		var i int
		if n < 0 {
			i = last + (n+1)*7
			i -= int(floorMod(int64(wd(i)-weekday), 7))
		} else {
			i = first + (n-1)*7
			i += int(floorMod(int64(7-wd(i)+weekday), 7))
		}
		if first <= i && i <= last {
			set(i)
		}
	})
}

// weekNoMask sets the days i of a year (0 = 1 January) that BYWEEKNO
// picks, with weeks starting on WKST as RFC 5545 3.3.10 defines them. wd0
// and ylen are the year's first weekday and length, pwd0 and plen the
// previous year's. This is dateutil's algorithm, quirks included.
func (f *filter) weekNoMask(set func(int), wd0, ylen, pwd0, plen int) {
	wkst := f.wkst
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
			set(i)
			i++
			if wd(i) == wkst {
				break
			}
		}
	}
	for sign := range 2 {
		for rest := f.weekNo[sign]; rest != 0; rest &= rest - 1 {
			n := bits.TrailingZeros64(rest)
			if sign == 1 {
				n = numweeks + 1 - n
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
	}
	if f.hasWeekNoValue(1) {
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
		if !f.hasWeekNoValue(-1) {
			lno1wkst := int(floorMod(int64(7-pwd0+wkst), 7))
			if lno1wkst >= 4 {
				lnumweeks = 52 + (plen+int(floorMod(int64(pwd0-wkst), 7)))%7/4
			} else {
				lnumweeks = 52 + int(floorMod(int64(ylen-no1wkst), 7))/4
			}
		}
		if f.hasWeekNoValue(lnumweeks) {
			for i := 0; i < no1wkst; i++ {
				set(i)
			}
		}
	}
}

// newRule builds the rule of rc anchored at the wall time start in loc.
func newRule(rc *recur, start int64, loc *time.Location, dateOnlyStart bool, w *work) (*rule, error) {
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
		startDay: floorDiv(start, secondsPerDay),
		until:    math.MaxInt64,
		lastWall: (maxDay+1)*secondsPerDay - 1,
	}
	if rc.until != "" {
		dt, err := parseDateTime(rc.until)
		if err != nil {
			return nil, fmt.Errorf("UNTIL=%s: %w", cut(rc.until), err)
		}
		if dt.dateOnly && !dateOnlyStart {
			return nil, fmt.Errorf("UNTIL=%s: must be a date-time like %sT235959Z, since DTSTART has a time", rc.until, rc.until)
		}
		r.until = instantOf(dt, loc)
		// An instant's wall time is within a day or so of it.
		r.lastWall = min(r.lastWall, r.until+2*secondsPerDay)
	}

	sy, sm, sd := civilFromDays(r.startDay)
	sec := start - r.startDay*secondsPerDay
	sh, smin, ss := int(sec/3600), int(sec/60%60), int(sec%60)
	swd := weekdayOf(r.startDay)

	f := filter{yearly: r.freq == yearly}
	for _, n := range rc.byWeekNo {
		if n > 0 {
			f.weekNo[0] |= 1 << uint(n)
		} else {
			f.weekNo[1] |= 1 << uint(-n)
		}
		f.wkst = rc.wkst
	}
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
		f.byMonth |= 1 << uint(m)
	}
	for _, d := range byMonthDay {
		if d > 0 {
			f.byMonthDay |= 1 << uint(d)
		} else {
			f.byNMonthDay |= 1 << uint(-d)
		}
	}
	for _, d := range rc.byYearDay {
		f.hasYearDay = true
		if d > 0 {
			bitSet(f.byYearDay[:], int64(d))
		} else {
			bitSet(f.byNYearDay[:], int64(-d))
		}
	}
	var nth []byte
	for _, d := range byDay {
		if d.n == 0 {
			f.byWeekday |= 1 << uint(d.weekday)
		} else {
			nth = append(nth, byte(d.weekday), byte(int8(d.n)))
		}
	}
	if len(nth) > 0 {
		// In increasing order, so that equal filters are equal.
		pairs := make([]uint16, len(nth)/2)
		for i := range pairs {
			pairs[i] = uint16(nth[2*i])<<8 | uint16(nth[2*i+1])
		}
		slices.Sort(pairs)
		for i, p := range pairs {
			nth[2*i], nth[2*i+1] = byte(p>>8), byte(p)
		}
		f.nth = string(nth)
	}
	// (Only with positions, so that filters alike are equal.)
	f.nthInMonth = f.nth != "" && (r.freq == monthly || f.byMonth != 0)
	if err := r.buildDays(&f, w); err != nil {
		return nil, err
	}
	r.weekdays = f.weekdaysOnly()

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
		hours = []int{0}
	case minutely:
		r.unit, r.perDay = 60, 1440
		hours, minutes = []int{0}, []int{0}
	case secondly:
		r.unit, r.perDay = 1, secondsPerDay
		hours, minutes, seconds = []int{0}, []int{0}, []int{0}
	}
	r.hours, r.minutes, r.seconds = int32s(hours), int32s(minutes), int32s(seconds)
	r.nt = len(hours) * len(minutes) * len(seconds)

	if r.freq >= daily && len(rc.bySetPos) > 0 {
		// A period of one day or less always holds the same times (when
		// its day passes), so BYSETPOS picks the same ones every time.
		var picked []int32
		for _, p := range rc.bySetPos {
			i := p - 1
			if p < 0 {
				i = r.nt + p
			}
			if i >= 0 && i < r.nt {
				picked = append(picked, int32(r.timeAt(i)))
			}
		}
		if len(picked) == 0 {
			return nil, fmt.Errorf("%w: BYSETPOS=%s picks nothing, as each %v period holds %d occurrence(s)",
				ErrNoOccurrence, cut(rc.seen[partBySetPos]), r.freq, r.nt)
		}
		slices.Sort(picked)
		r.picked = slices.Compact(picked)
		r.nt = len(r.picked)
	} else if len(rc.bySetPos) > 0 {
		r.minPick = math.MaxInt
		for _, p := range rc.bySetPos {
			if p > 0 {
				r.setPos = append(r.setPos, int32(p-1))
			} else {
				r.setNeg = append(r.setNeg, int32(p))
			}
			r.minPick = min(r.minPick, max(p, -p))
		}
	}
	if r.minPick == 0 {
		r.minPick = 1
	}

	switch r.freq {
	case yearly:
		r.origin = int64(sy)
	case monthly:
		r.origin = int64(sy)*12 + int64(sm-1)
	case weekly:
		r.origin = r.startDay - floorMod(int64(swd-r.wkst), 7)
	case daily:
		r.origin = r.startDay
	default:
		r.origin = floorDiv(start, r.unit)
		if err := r.buildSlots(rc, w); err != nil {
			return nil, err
		}
	}
	r.lastDay = floorDiv(r.lastWall, secondsPerDay)
	return r, nil
}

func int32s(list []int) []int32 {
	out := make([]int32, len(list))
	for i, v := range list {
		out[i] = int32(v)
	}
	return out
}

// timeAt returns the time of day (to DAILY) or offset in the period
// (HOURLY and finer) of entry i of a day or period.
func (r *rule) timeAt(i int) int64 {
	if r.picked != nil {
		return int64(r.picked[i])
	}
	ns, nm := len(r.seconds), len(r.minutes)
	s := i % ns
	i /= ns
	return int64(r.hours[i/nm])*3600 + int64(r.minutes[i%nm])*60 + int64(r.seconds[s])
}

// seekTime returns the first entry of a day or period whose time is at or
// after tod, or nt.
func (r *rule) seekTime(tod int64) int {
	lo, hi := 0, r.nt
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.timeAt(mid) < tod {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// monthTable holds the days of a filter (bits 1 to 31) of each month
// shape, and their number.
type monthTable struct {
	days  [monthShapes]uint32
	count [monthShapes]uint8
}

// yearTable holds the days of a filter (bit 0 is 1 January) of each year
// shape, and their number.
type yearTable struct {
	days  [yearShapes][6]uint64
	count [yearShapes]uint16
}

// dayTables are the tables of one filter, shared by the rules of a
// schedule that have it.
type dayTables struct {
	months *monthTable
	years  *yearTable // FREQ=YEARLY only
}

// The memory a month table and a year table hold.
const (
	monthTableBytes = monthShapes * 5
	yearTableBytes  = yearShapes * 50
)

// weekdayTables[set] is the month table of a filter of weekdays only
// (BYDAY without positions), built once for the whole program: 128 tables
// at most, shared by every schedule.
var weekdayTables [128]struct {
	once sync.Once
	t    *monthTable
}

func weekdayTable(set uint8) *monthTable {
	e := &weekdayTables[set]
	e.once.Do(func() {
		e.t = (&filter{byWeekday: set}).monthTable()
	})
	return e.t
}

// monthTable computes the month table of f.
func (f *filter) monthTable() *monthTable {
	t := new(monthTable)
	for m := 1; m <= 12; m++ {
		for _, leap := range [2]bool{false, true} {
			for wd1 := range 7 {
				sh := monthShape(m, leap, wd1)
				t.days[sh] = f.monthMask(m, leap, wd1)
				t.count[sh] = uint8(bits.OnesCount32(t.days[sh]))
			}
		}
	}
	return t
}

// yearTable computes the year table of f from its month table.
func (f *filter) yearTable(months *monthTable) *yearTable {
	t := new(yearTable)
	for wd0 := range 7 {
		for _, leap := range [2]bool{false, true} {
			for _, prevLeap := range [2]bool{false, true} {
				sh := yearShape(wd0, leap, prevLeap)
				t.days[sh] = f.yearMask(&months.days, wd0, leap, prevLeap)
				n := 0
				for _, w := range t.days[sh] {
					n += bits.OnesCount64(w)
				}
				t.count[sh] = uint16(n)
			}
		}
	}
	return t
}

// Parse steps of building day tables (see work), besides the memory they
// keep (tableBytesPerStep).
const (
	stepsMonthTable = 200 // a month table, plus stepsNthMonth per positioned BYDAY entry
	stepsNthMonth   = 50
	stepsYearTable  = 120 // a year table, plus stepsNthYear per positioned BYDAY entry and stepsWeekNo per BYWEEKNO value
	stepsNthYear    = 15
	stepsWeekNo     = 60
)

// buildDays finds or builds the month and year tables of the rule's day
// filter, charging w.
func (r *rule) buildDays(f *filter, w *work) error {
	if !f.any() {
		if r.freq == weekly {
			r.week = 0x7f
		}
		return nil // every day passes
	}
	var t dayTables
	switch {
	case f.weekdaysOnly() && !f.yearly:
		t.months = weekdayTable(f.byWeekday)
	default:
		if shared, ok := w.days[*f]; ok {
			t = shared
			break
		}
		nth := len(f.nth) / 2
		cost := stepsMonthTable + stepsNthMonth*nth + monthTableBytes/tableBytesPerStep
		if f.yearly {
			cost += stepsYearTable + stepsNthYear*nth + stepsWeekNo*(bits.OnesCount64(f.weekNo[0])+bits.OnesCount64(f.weekNo[1])) +
				yearTableBytes/tableBytesPerStep
		}
		if !w.spend(cost) {
			return w.ruleExceeded("preparing")
		}
		t.months = f.monthTable()
		if f.yearly {
			t.years = f.yearTable(t.months)
		}
		if w.days == nil {
			w.days = map[filter]dayTables{}
		}
		w.days[*f] = t
		w.bytes += monthTableBytes
		if t.years != nil {
			w.bytes += yearTableBytes
		}
	}
	r.months, r.monthCount = &t.months.days, &t.months.count
	switch r.freq {
	case weekly:
		// With BYMONTH, week holds the days a week may have, its months
		// saying which it has.
		for j := range 7 {
			if f.byWeekday == 0 || f.byWeekday&(1<<uint((r.wkst+j)%7)) != 0 {
				r.week |= 1 << uint(j)
			}
		}
		r.weekByMo = f.byMonth != 0
	case yearly:
		r.years, r.yearCount = &t.years.days, &t.years.count
	}
	return nil
}

// yearDays returns the days of a year whose January 1st is a weekday
// wd0, leap or not, that pass the month table months: bit i for day i.
func yearDays(months *[monthShapes]uint32, wd0 int, leap bool) [6]uint64 {
	var mask [6]uint64
	first := 0
	for m := 1; m <= 12; m++ {
		mm := uint64(months[monthShape(m, leap, (wd0+first)%7)] >> 1)
		mask[first>>6] |= mm << uint(first&63)
		if first&63 > 32 {
			mask[first>>6+1] |= mm >> uint(64-first&63)
		}
		first += cumulativeDays[m] - cumulativeDays[m-1]
		if m == 2 && leap {
			first++
		}
	}
	return mask
}

// yearMask returns the days of a year of the given shape that pass f.
func (f *filter) yearMask(months *[monthShapes]uint32, wd0 int, leap, prevLeap bool) [6]uint64 {
	mask := yearDays(months, wd0, leap)
	ylen, plen := 365, 365
	if leap {
		ylen++
	}
	if prevLeap {
		plen++
	}
	and := func(mark func(set func(int))) {
		var other [6]uint64
		mark(func(i int) { bitSet(other[:], int64(i)) })
		for i := range mask {
			mask[i] &= other[i]
		}
	}
	if f.nth != "" && !f.nthInMonth {
		and(func(set func(int)) { f.markNth(set, 0, ylen-1, wd0) })
	}
	if f.hasWeekNo() {
		pwd0 := int(floorMod(int64(wd0-plen), 7))
		and(func(set func(int)) { f.weekNoMask(set, wd0, ylen, pwd0, plen) })
	}
	return mask
}

// slotKey identifies the slot table of a rule: its frequency, the hours,
// minutes and seconds it allows, its INTERVAL and the phase of DTSTART.
type slotKey struct {
	freq             frequency
	hours            uint32
	minutes, seconds uint64
	interval, phase  int64
}

// slotTable is the slot table of a rule, shared by the rules of a
// schedule that have the same slotKey.
type slotTable struct {
	slots               []uint64 // nil when every slot INTERVAL reaches is allowed
	slotWords           []uint64
	nSlots              int
	firstSlot, lastSlot int64
	strides             int
}

// Parse steps of building slot tables (see work), besides the memory they
// keep (tableBytesPerStep).
const (
	slotWordsPerStep = 2 // slot words cleared and counted per step
	combosPerStep    = 2 // hours (MINUTELY) or minutes (SECONDLY) placed per step
	slotsPerStep     = 8 // slots looked at per step when computing strides
	stepsReachClass  = 2 // per class of INTERVAL that everyDayReaches looks at
)

// buildSlots computes, for HOURLY and finer, which periods of a day BYHOUR,
// BYMINUTE and BYSECOND allow, keeping only those INTERVAL can reach from
// DTSTART on some day.
func (r *rule) buildSlots(rc *recur, w *work) error {
	r.aligned = r.perDay%r.interval == 0
	filtered := len(rc.byHour) > 0 ||
		r.freq >= minutely && len(rc.byMinute) > 0 ||
		r.freq >= secondly && len(rc.bySecond) > 0
	if !filtered {
		return nil
	}
	// The slots BYHOUR, BYMINUTE and BYSECOND allow are the combinations
	// of their values (all values where a part is absent or finer than
	// the frequency's unit), of which those in INTERVAL's phase stay.
	const all60 = 1<<60 - 1
	step := gcd(r.interval, r.perDay)
	key := slotKey{freq: r.freq, hours: 1<<24 - 1, minutes: all60, seconds: all60, interval: r.interval, phase: floorMod(r.origin, step)}
	if len(rc.byHour) > 0 {
		key.hours = 0
		for _, h := range rc.byHour {
			key.hours |= 1 << uint(h)
		}
	}
	if len(rc.byMinute) > 0 && r.freq >= minutely {
		key.minutes = 0
		for _, m := range rc.byMinute {
			key.minutes |= 1 << uint(m)
		}
	}
	if len(rc.bySecond) > 0 && r.freq >= secondly {
		key.seconds = 0
		for _, s := range rc.bySecond {
			key.seconds |= 1 << uint(s)
		}
	}
	t, ok := w.slots[key]
	if !ok {
		var err error
		if t, err = r.slotTable(key, w); err != nil {
			return err
		}
		if w.slots == nil {
			w.slots = map[slotKey]*slotTable{}
		}
		w.slots[key] = t
		w.bytes += 8 * (len(t.slots) + len(t.slotWords))
	}
	if t.nSlots == 0 {
		parts := []string{}
		for _, name := range []string{"BYHOUR", "BYMINUTE", "BYSECOND"} {
			if v, ok := rc.seen.get(name); ok {
				parts = append(parts, name+"="+cut(v))
			}
		}
		return fmt.Errorf("%w: with FREQ=%v;INTERVAL=%d from DTSTART, %s is never reached",
			ErrNoOccurrence, r.freq, r.interval, strings.Join(parts, ";"))
	}
	r.slots, r.slotWords, r.nSlots = t.slots, t.slotWords, t.nSlots
	r.firstSlot, r.lastSlot, r.strides = t.firstSlot, t.lastSlot, t.strides
	return nil
}

// slotTable computes the slot table of key for r, charging w.
func (r *rule) slotTable(key slotKey, w *work) (*slotTable, error) {
	words := int((r.perDay + 63) / 64)
	combos := 1
	switch r.freq {
	case minutely:
		combos = bits.OnesCount32(key.hours)
	case secondly:
		combos = bits.OnesCount32(key.hours) * bits.OnesCount64(key.minutes)
	}
	if !w.spend(words/slotWordsPerStep + combos/combosPerStep + 1) {
		return nil, w.ruleExceeded("preparing")
	}
	t := &slotTable{slots: make([]uint64, words)}
	step, phase := gcd(r.interval, r.perDay), key.phase
	// reach returns the slots from at to at+63 in INTERVAL's phase, for
	// at%step = mod.
	var pattern uint64 // bits 0, step, 2*step, ...
	for j := int64(0); j < 64; j += step {
		pattern |= 1 << uint(j)
	}
	reach := func(mod int64) uint64 {
		off := phase - mod
		if off < 0 {
			off += step
		}
		if off < 64 {
			return pattern << uint(off)
		}
		return 0
	}
	var minuteMod [60]int64 // SECONDLY: m*60 % step
	if r.freq == secondly {
		for m := range minuteMod {
			minuteMod[m] = int64(m) * 60 % step
		}
	}
	place := func(at int64, set uint64) {
		t.slots[at>>6] |= set << uint(at&63)
		if at&63 != 0 && int(at>>6)+1 < words {
			t.slots[at>>6+1] |= set >> uint(64-at&63)
		}
	}
	for hs := key.hours; hs != 0; hs &= hs - 1 {
		h := int64(bits.TrailingZeros32(hs))
		switch r.freq {
		case hourly:
			place(h, reach(h%step)&1)
		case minutely:
			place(h*60, key.minutes&reach(h*60%step))
		default:
			hMod := h * 3600 % step
			for ms := key.minutes; ms != 0; ms &= ms - 1 {
				m := bits.TrailingZeros64(ms)
				mod := hMod + minuteMod[m]
				if mod >= step {
					mod -= step
				}
				place(h*3600+int64(m)*60, key.seconds&reach(mod))
			}
		}
	}
	for _, word := range t.slots {
		t.nSlots += bits.OnesCount64(word)
	}
	if t.nSlots == 0 {
		return t, nil
	}
	if int64(t.nSlots) == r.perDay/step {
		// Every slot INTERVAL reaches is allowed: as if none were named.
		t.slots = nil
		return t, nil
	}
	t.slotWords = make([]uint64, (len(t.slots)+63)/64)
	if !w.spend(8 * (len(t.slots) + len(t.slotWords)) / tableBytesPerStep) {
		return nil, w.ruleExceeded("preparing")
	}
	for w, word := range t.slots {
		if word != 0 {
			bitSet(t.slotWords, int64(w))
		}
	}
	t.firstSlot = nextSetBit(t.slots, 0)
	for w := len(t.slots) - 1; w >= 0; w-- {
		if t.slots[w] != 0 {
			t.lastSlot = int64(w)<<6 + int64(63-bits.LeadingZeros64(t.slots[w]))
			break
		}
	}
	if !(r.perDay%r.interval == 0) && r.interval < r.perDay {
		// From each slot between the first and the last allowed one, the
		// strides to the next allowed slot of its progression, or past
		// the last: the longest run of slots not allowed in a
		// progression.
		i, lo, hi := r.interval, t.firstSlot, t.lastSlot
		if !w.spend(int(hi-lo+1)/slotsPerStep + 1) {
			return nil, w.ruleExceeded("preparing")
		}
		for c := lo; c < lo+i && c <= hi; c++ {
			run := 0
			for b := c; b <= hi; b += i {
				if t.slots[b>>6]&(1<<uint(b&63)) != 0 {
					run = 0
					continue
				}
				run++
				t.strides = max(t.strides, run)
			}
		}
	}
	return t, nil
}

// size estimates the memory the rule holds, in bytes, but for its tables
// (see work.bytes).
func (r *rule) size() int {
	return 448 + 4*(len(r.hours)+len(r.minutes)+len(r.seconds)+len(r.picked)+len(r.setPos)+len(r.setNeg))
}
