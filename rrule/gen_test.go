package rrule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// genCase is a generated schedule with the window in which tests compare
// occurrences.
type genCase struct {
	Zone    string   // Options.Timezone
	Form    string   // how DTSTART is written: tzid, utc, floating or bare (none)
	Start   int64    // DTSTART as a wall time (for bare: the anchor)
	Created int64    // Options.Created (Unix seconds)
	Rules   []string // RRULE bodies without UNTIL
	Until   int64    // UNTIL instant when HasUntil
	HasUtil bool
	RDates  []int64 // instants
	ExDates []int64 // instants
	From    int64   // window, instants
	To      int64
	Horizon int64 // occurrences up to here are compared, to check Next near To
}

// zoneOf returns the zone rules are expanded in.
func (c genCase) zoneOf() *time.Location {
	if c.Form == "utc" {
		return time.UTC
	}
	loc, err := loadLocation(c.Zone)
	if err != nil {
		panic(err)
	}
	return loc
}

func formatWall(w int64) string {
	return time.Unix(w, 0).UTC().Format("20060102T150405")
}

// Text returns the schedule text.
func (c genCase) Text() string {
	var b strings.Builder
	switch c.Form {
	case "tzid":
		fmt.Fprintf(&b, "DTSTART;TZID=%s:%s\n", c.Zone, formatWall(c.Start))
	case "utc":
		fmt.Fprintf(&b, "DTSTART:%sZ\n", formatWall(c.Start))
	case "floating":
		fmt.Fprintf(&b, "DTSTART:%s\n", formatWall(c.Start))
	case "bare":
		body := c.Rules[0]
		if c.HasUtil {
			body += ";UNTIL=" + formatWall(c.Until) + "Z"
		}
		return body
	}
	for _, r := range c.Rules {
		b.WriteString("RRULE:" + r)
		if c.HasUtil {
			b.WriteString(";UNTIL=" + formatWall(c.Until) + "Z")
		}
		b.WriteString("\n")
	}
	for _, d := range c.RDates {
		fmt.Fprintf(&b, "RDATE:%sZ\n", formatWall(d))
	}
	for _, d := range c.ExDates {
		fmt.Fprintf(&b, "EXDATE:%sZ\n", formatWall(d))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Options returns the options of the case. The limits are lifted: the
// generator makes rules no one would write, which the default work limit
// may refuse, and the tests compare what every rule expands to.
func (c genCase) Options() Options {
	return Options{Timezone: c.Zone, Created: time.Unix(c.Created, 0), Limits: unlimited}
}

// unlimited lifts the limits that generated rules may exceed.
var unlimited = Limits{MaxSteps: 1 << 40, MaxCount: 1 << 30, MaxParseSteps: 1 << 40}

var genZones = []string{
	"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
	"America/Sao_Paulo", "Pacific/Auckland", "America/St_Johns", "Europe/London", "Asia/Tehran",
}

// genAges bounds DTSTART's age per frequency, so that walking from DTSTART
// (the naive walk and dateutil) stays affordable in tests.
var genAges = [...]time.Duration{
	yearly:   250 * 365 * 24 * time.Hour,
	monthly:  60 * 365 * 24 * time.Hour,
	weekly:   30 * 365 * 24 * time.Hour,
	daily:    12 * 365 * 24 * time.Hour,
	hourly:   2 * 365 * 24 * time.Hour,
	minutely: 6 * 24 * time.Hour,
	secondly: 3 * time.Hour,
}

// genWindows is the length of the compared window per frequency.
var genWindows = [...]time.Duration{
	yearly:   15 * 365 * 24 * time.Hour,
	monthly:  3 * 365 * 24 * time.Hour,
	weekly:   300 * 24 * time.Hour,
	daily:    90 * 24 * time.Hour,
	hourly:   10 * 24 * time.Hour,
	minutely: 30 * time.Hour,
	secondly: time.Hour,
}

// dstEdges are DST changes near which windows are often placed, with
// their zone.
var dstEdges = []struct {
	zone string
	at   time.Time
}{
	{"Europe/Paris", time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
	{"Europe/Paris", time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},
	{"Europe/London", time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
	{"America/New_York", time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},
	{"America/New_York", time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
	{"America/St_Johns", time.Date(2026, 3, 8, 5, 30, 0, 0, time.UTC)},
	{"Pacific/Auckland", time.Date(2026, 4, 4, 14, 0, 0, 0, time.UTC)},
	{"Pacific/Auckland", time.Date(2026, 9, 26, 14, 0, 0, 0, time.UTC)},
	{"Australia/Lord_Howe", time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC)},
	{"Australia/Lord_Howe", time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC)},
	{"America/Sao_Paulo", time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC)}, // midnight gap
}

func pickN(rng *rand.Rand, n int, gen func() int) []int {
	var out []int
	for i := 0; i < n; i++ {
		out = append(out, gen())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func joinInts(list []int) string {
	s := make([]string, len(list))
	for i, v := range list {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

func signed(rng *rand.Rand, hi int) int {
	v := 1 + rng.IntN(hi)
	if rng.IntN(3) == 0 {
		return -v
	}
	return v
}

// genBody returns a random RRULE body without UNTIL that RFC 5545 allows
// and that both rrule-go and dateutil expand without failing.
func genBody(rng *rand.Rand, f frequency, withCount bool) string {
	parts := []string{"FREQ=" + f.String()}
	maxInterval := [...]int{yearly: 4, monthly: 14, weekly: 5, daily: 12, hourly: 30, minutely: 90, secondly: 200}
	if rng.IntN(2) == 0 {
		parts = append(parts, fmt.Sprintf("INTERVAL=%d", 1+rng.IntN(maxInterval[f])))
	}
	if rng.IntN(5) == 0 {
		parts = append(parts, "WKST="+weekdayNames[rng.IntN(7)])
	}
	hasBy := false
	add := func(name string, list []int) {
		parts = append(parts, name+"="+joinInts(list))
		hasBy = true
	}
	chance := func(p float64) bool { return rng.Float64() < p }
	byMonth := false
	if chance(map[bool]float64{true: 0.3, false: 0.15}[f <= daily]) {
		add("BYMONTH", pickN(rng, 1+rng.IntN(4), func() int { return 1 + rng.IntN(12) }))
		byMonth = true
	}
	if f != weekly && chance(map[bool]float64{true: 0.35, false: 0.1}[f <= monthly]) {
		add("BYMONTHDAY", pickN(rng, 1+rng.IntN(3), func() int { return signed(rng, 31) }))
	}
	if (f == yearly || f >= hourly) && chance(0.12) {
		add("BYYEARDAY", pickN(rng, 1+rng.IntN(4), func() int { return signed(rng, 366) }))
	}
	weekNo := false
	if f == yearly && chance(0.2) {
		add("BYWEEKNO", pickN(rng, 1+rng.IntN(3), func() int { return signed(rng, 53) }))
		weekNo = true
	}
	if chance(0.45) {
		var days []string
		if (f == monthly || f == yearly) && !weekNo && chance(0.5) {
			hi := 5
			if f == yearly && !byMonth {
				hi = 53
			}
			for _, n := range pickN(rng, 1+rng.IntN(2), func() int { return signed(rng, hi) }) {
				days = append(days, fmt.Sprintf("%d%s", n, weekdayNames[rng.IntN(7)]))
			}
		} else {
			for _, d := range pickN(rng, 1+rng.IntN(5), func() int { return rng.IntN(7) }) {
				days = append(days, weekdayNames[d])
			}
		}
		slices.Sort(days)
		parts = append(parts, "BYDAY="+strings.Join(slices.Compact(days), ","))
		hasBy = true
	}
	if chance(map[bool]float64{true: 0.5, false: 0.3}[f <= daily]) {
		add("BYHOUR", pickN(rng, 1+rng.IntN(4), func() int { return rng.IntN(24) }))
	}
	if f != hourly && chance(0.3) || f == hourly && chance(0.5) {
		add("BYMINUTE", pickN(rng, 1+rng.IntN(3), func() int { return rng.IntN(60) }))
	}
	if chance(0.15) {
		add("BYSECOND", pickN(rng, 1+rng.IntN(2), func() int { return rng.IntN(60) }))
	}
	if hasBy && chance(0.25) {
		add("BYSETPOS", pickN(rng, 1+rng.IntN(2), func() int { return signed(rng, 4) }))
	}
	if withCount {
		parts = append(parts, fmt.Sprintf("COUNT=%d", 1+rng.IntN(400)))
	}
	rng.Shuffle(len(parts)-1, func(i, j int) { parts[i+1], parts[j+1] = parts[j+1], parts[i+1] })
	return strings.Join(parts, ";")
}

var genFreqWeights = []frequency{yearly, yearly, monthly, monthly, monthly, weekly, weekly, daily, daily, daily, hourly, hourly, hourly, minutely, minutely, secondly}

// genSchedule returns a random schedule whose DTSTART is old for its
// frequency, and a window to compare around 2026.
func genSchedule(rng *rand.Rand) genCase {
	f := genFreqWeights[rng.IntN(len(genFreqWeights))]
	c := genCase{Zone: genZones[rng.IntN(len(genZones))]}
	c.Form = []string{"tzid", "tzid", "tzid", "utc", "floating", "bare"}[rng.IntN(6)]

	window := genWindows[f]
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
	if rng.IntN(2) == 0 {
		// Straddle a DST change of the zone.
		edge := dstEdges[rng.IntN(len(dstEdges))]
		c.Zone = edge.zone
		from = edge.at.Add(-time.Duration(rng.Int64N(int64(window))))
	}
	from = from.Truncate(time.Second)
	c.From, c.To = from.Unix(), from.Add(window).Unix()
	c.Horizon = c.To + int64(window/4/time.Second)

	age := time.Duration(rng.Int64N(int64(genAges[f])))
	startInst := from.Add(-age)
	if rng.IntN(8) == 0 {
		startInst = from.Add(window / 3) // DTSTART inside the window
	}
	loc := c.zoneOf()
	wall := startInst.In(loc)
	sec := []int{0, 0, 0, rng.IntN(60)}[rng.IntN(4)]
	min := []int{0, 0, 30, rng.IntN(60)}[rng.IntN(4)]
	c.Start = wallOf(wall.Year(), int(wall.Month()), wall.Day(), wall.Hour(), min, sec)
	if c.Form == "bare" {
		c.Created = startInst.Unix()
		c.Start = wallOf(wall.Year(), int(wall.Month()), wall.Day(), 0, 0, 0)
	}

	withCount := rng.IntN(4) == 0
	c.Rules = []string{genBody(rng, f, withCount)}
	if c.Form != "bare" && rng.IntN(10) == 0 {
		// No finer than the first, whose DTSTART age suits it.
		c.Rules = append(c.Rules, genBody(rng, frequency(rng.IntN(int(f)+1)), false))
	}
	if !withCount && len(c.Rules) == 1 && rng.IntN(5) == 0 {
		c.Until, c.HasUtil = c.From+rng.Int64N(c.To-c.From), true
	}
	if c.Form != "bare" {
		for i := rng.IntN(3); i > 0 && rng.IntN(3) == 0; i-- {
			c.RDates = append(c.RDates, c.From+rng.Int64N(c.To-c.From))
		}
	}
	return c
}
