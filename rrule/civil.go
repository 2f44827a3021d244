package rrule

// Civil (wall-clock) arithmetic. A wall time is held as seconds since
// 1970-01-01T00:00:00 counted as if every day had 86400 seconds, that is,
// the local date and clock read as if they were UTC. A day is held as days
// since 1970-01-01. Weekdays count from Monday = 0, as RFC 5545 and
// python-dateutil do.

const (
	secondsPerDay = 86400
	// maxYear is the last year whose periods are expanded, as in
	// rrule-go and python-dateutil.
	maxYear = 9999
)

var cumulativeDays = [13]int{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	return a - floorDiv(a, b)*b
}

func ceilDiv(a, b int64) int64 {
	return -floorDiv(-a, b)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func isLeap(y int) bool {
	return y%4 == 0 && (y%100 != 0 || y%400 == 0)
}

func daysInMonth(y, m int) int {
	if m == 2 && isLeap(y) {
		return 29
	}
	return cumulativeDays[m] - cumulativeDays[m-1]
}

// daysFromCivil returns the day number of y-m-d in the proleptic Gregorian
// calendar.
func daysFromCivil(y, m, d int) int64 {
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	yy := yoe + era*400
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}

// weekdayOf returns the weekday of a day number, Monday = 0.
func weekdayOf(day int64) int {
	return int(floorMod(day+3, 7)) // 1970-01-01 was a Thursday
}

// wallOf returns the wall time of a civil date and clock.
func wallOf(y, m, d, hh, mm, ss int) int64 {
	return daysFromCivil(y, m, d)*secondsPerDay + int64(hh*3600+mm*60+ss)
}

var maxDay = daysFromCivil(maxYear, 12, 31)
