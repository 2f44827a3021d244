package rrule

import (
	"fmt"
	"strings"
	"time"
)

// Texts that cost the most, accepted or refused, within the default
// limits: the benchmarks measure them and the tests check their bounds.

// joinLines returns n lines made by line(i).
func joinLines(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// dateList returns n comma-separated UTC date-times, one day apart from
// start at the given time of day.
func dateList(n int, start time.Time) string {
	out := make([]string, n)
	for i := range out {
		out[i] = start.AddDate(0, 0, i).Format("20060102T150405Z")
	}
	return strings.Join(out, ",")
}

func numbers(from, to int) string {
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return strings.Join(out, ",")
}

var worstStart = time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)

// worstAccepted are schedules at or near the default limits that Parse
// accepts: each costs close to Limits.MaxParseSteps to parse, or
// Limits.MaxSteps to search, or keeps the most memory.
var worstAccepted = []struct{ name, text string }{
	{"100-daily-rules", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d;BYMINUTE=%d", i%24, i%60) })},
	{"100-count-rules", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string { return fmt.Sprintf("RRULE:FREQ=SECONDLY;INTERVAL=%d;COUNT=1000", i+1) })},
	{"count-at-limit", "DTSTART:20260101T000000Z\nRRULE:FREQ=SECONDLY;COUNT=100000"},
	{"monthly-count", "DTSTART:20260101T000000Z\nRRULE:FREQ=MONTHLY;BYMONTHDAY=1,15;COUNT=33000"},
	{"100-secondly-interval-7", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string {
			return fmt.Sprintf("RRULE:FREQ=SECONDLY;INTERVAL=%d;BYSECOND=%s", 7+i%5, numbers(0, 59))
		})},
	{"22-secondly-tables", "DTSTART:20260101T000000Z\n" +
		joinLines(22, func(i int) string { return fmt.Sprintf("RRULE:FREQ=SECONDLY;BYSECOND=%s", numbers(0, 58-i)) })},
	{"13-weekly-bymonth", "DTSTART:20260101T000000Z\n" +
		joinLines(13, func(i int) string {
			return fmt.Sprintf("RRULE:FREQ=WEEKLY;INTERVAL=%d;BYMONTH=%d;BYDAY=MO", 1+i%7, 1+i%12)
		})},
	{"30-yearly-bysetpos", "DTSTART:20260101T000000Z\n" +
		joinLines(30, func(i int) string {
			return fmt.Sprintf("RRULE:FREQ=YEARLY;BYDAY=MO,WE,FR;BYHOUR=%d;BYSETPOS=%s", i%24, numbers(1, 40))
		})},
	{"100-yearly-tables", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string {
			return fmt.Sprintf("RRULE:FREQ=YEARLY;BYMONTH=%d;BYDAY=-1FR,%dMO;BYHOUR=%d", 1+i%12, 1+i%4, i%24)
		})},
	{"sparse-daily-interval", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=17;BYMONTH=2;BYMONTHDAY=29"},
	{"sparse-minutely-interval", "DTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY;INTERVAL=3043;BYHOUR=3;BYDAY=MO"},
	{"1000-consecutive-exdates", "DTSTART:20260101T060000Z\nRRULE:FREQ=DAILY\nEXDATE:" + dateList(1000, worstStart)},
	{"6-rules-1000-exdates-1000-rdates", "DTSTART:20260101T000000Z\n" +
		joinLines(6, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d", i) }) +
		"EXDATE:" + dateList(1000, worstStart) + "\nRDATE:" + dateList(1000, worstStart.Add(30*time.Minute))},
}

// worstRefused are texts Parse refuses, some after all its work.
var worstRefused = []struct{ name, text string }{
	{"1MiB", "RRULE:FREQ=DAILY\n" + strings.Repeat("X", 1<<20-17)},
	{"5000-rules-25000-exdates", "DTSTART:20260101T000000Z\n" +
		joinLines(5000, func(i int) string { return "RRULE:FREQ=MINUTELY;INTERVAL=" + fmt.Sprint(i+1) }) +
		joinLines(25, func(int) string { return "EXDATE:" + dateList(1000, worstStart) })},
	{"300-secondly-count", joinLines(300, func(i int) string { return fmt.Sprintf("RRULE:FREQ=SECONDLY;COUNT=%d", 1000000-i) })},
	{"folded-64KiB", "RRULE:FREQ=DAILY;\n" + strings.Repeat(" BYHOUR=1;\n", 5900)},
	{"100-rules-1000-exdates", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string { return fmt.Sprintf("RRULE:FREQ=HOURLY;INTERVAL=%d", 1+i%24) }) +
		"EXDATE:" + dateList(1000, worstStart)},
	{"100-sparse-interval-rules", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string {
			return fmt.Sprintf("RRULE:FREQ=DAILY;INTERVAL=%d;BYMONTH=2;BYMONTHDAY=29", 101+2*i)
		})},
	{"100-weekly-bymonth", "DTSTART:20260101T000000Z\n" +
		joinLines(100, func(i int) string {
			return fmt.Sprintf("RRULE:FREQ=WEEKLY;INTERVAL=%d;BYMONTH=%d;BYDAY=MO", 1+i%7, 1+i%12)
		})},
	{"sparse-daily-interval-265", "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;INTERVAL=265;BYMONTH=2;BYMONTHDAY=29"},
	{"20-rules-1000-exdates-1000-rdates", "DTSTART:20260101T000000Z\n" +
		joinLines(20, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d", i) }) +
		"EXDATE:" + dateList(1000, worstStart) + "\nRDATE:" + dateList(1000, worstStart.Add(30*time.Minute))},
	{"23-secondly-tables", "DTSTART:20260101T000000Z\n" +
		joinLines(23, func(i int) string { return fmt.Sprintf("RRULE:FREQ=SECONDLY;BYSECOND=%s", numbers(0, 58-i)) })},
}
