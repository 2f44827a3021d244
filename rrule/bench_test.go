package rrule

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	rrulego "github.com/teambition/rrule-go"
)

// benchRules are the rule classes of the benchmarks, in Europe/Paris.
var benchRules = []struct{ name, rule string }{
	{"minutely-interval15", "FREQ=MINUTELY;INTERVAL=15"},
	{"minutely-byhour-byday", "FREQ=MINUTELY;INTERVAL=5;BYHOUR=9,10,11,12,13,14,15,16,17;BYDAY=MO,TU,WE,TH,FR"},
	{"hourly-interval2", "FREQ=HOURLY;INTERVAL=2"},
	{"hourly-byhour-byday", "FREQ=HOURLY;INTERVAL=3;BYHOUR=0,6,12,18;BYDAY=MO,WE,FR;BYMINUTE=30"},
	{"daily-byhour", "FREQ=DAILY;BYHOUR=6,16"},
	{"daily-bymonth-interval3", "FREQ=DAILY;INTERVAL=3;BYMONTH=1,2,3,10,11,12;BYHOUR=2;BYMINUTE=30"},
	{"weekly-byday", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;BYHOUR=7;BYMINUTE=30"},
	{"monthly-last-friday", "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=6"},
	{"monthly-last-workday-bysetpos", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18"},
	{"yearly-bymonth", "FREQ=YEARLY;BYMONTH=1,4,7,10;BYMONTHDAY=1;BYHOUR=3"},
	{"yearly-byweekno", "FREQ=YEARLY;BYWEEKNO=1,27;BYDAY=MO;BYHOUR=8"},
	{"sparse-hourly-byyearday", "FREQ=HOURLY;BYYEARDAY=100"},
	{"sparse-yearly-feb29-monday", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO"},
	{"daily-count", "FREQ=DAILY;BYHOUR=6;COUNT=5000"},
	{"hourly-count", "FREQ=HOURLY;INTERVAL=3;COUNT=50000"},
	{"minutely-count", "FREQ=MINUTELY;INTERVAL=10;COUNT=1000000"},
}

var benchAges = []struct {
	name string
	age  time.Duration
}{
	{"dtstart-1d", 24 * time.Hour},
	{"dtstart-5y", 5 * 365 * 24 * time.Hour},
}

// benchQueries are the times Next is asked about: spread over a week, off
// the hour.
func benchQueries(now time.Time) []time.Time {
	q := make([]time.Time, 64)
	for i := range q {
		q[i] = now.Add(time.Duration(i) * (7 * 24 * time.Hour / 64)).Add(time.Duration(i*37) * time.Second)
	}
	return q
}

// BenchmarkNext shows, for each rule class and DTSTART age, rrule-go's
// After (naive: it walks from DTSTART) beside Schedule.Next (fast), and
// Parse from the cache plus Next (fast-with-parse, what the refresh package
// pays per call). ns/op is the mean over the query times; p50-ns is the
// median over them of the per-call time.
func BenchmarkNext(b *testing.B) {
	now := time.Date(2026, 6, 15, 10, 17, 23, 0, time.UTC)
	queries := benchQueries(now)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		b.Fatal(err)
	}
	for _, rc := range benchRules {
		for _, age := range benchAges {
			start := now.Add(-age.age).In(paris)
			text := fmt.Sprintf("DTSTART;TZID=Europe/Paris:%s\nRRULE:%s",
				time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC).Format("20060102T150405"), rc.rule)
			b.Run(rc.name+"/"+age.name+"/naive", func(b *testing.B) {
				set, err := rrulego.StrToRRuleSet(text)
				if err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					set.After(queries[i%len(queries)], false)
					i++
				}
			})
			b.Run(rc.name+"/"+age.name+"/fast", func(b *testing.B) {
				s, err := Parse(text, Options{Limits: benchLimits})
				if err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					s.Next(queries[i%len(queries)])
					i++
				}
				b.StopTimer()
				b.ReportMetric(medianPerCall(func(t time.Time) { s.Next(t) }, queries), "p50-ns")
			})
			b.Run(rc.name+"/"+age.name+"/fast-with-parse", func(b *testing.B) {
				opt := Options{Timezone: "Europe/Paris", Created: now, Limits: benchLimits}
				if _, err := Parse(text, opt); err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					s, _ := Parse(text, opt)
					s.Next(queries[i%len(queries)])
					i++
				}
			})
		}
	}
}

// medianPerCall returns the median over queries of the time one call
// takes, each timed over a batch of calls.
func medianPerCall(call func(time.Time), queries []time.Time) float64 {
	const batch = 50
	per := make([]float64, len(queries))
	for i, q := range queries {
		start := time.Now()
		for range batch {
			call(q)
		}
		per[i] = float64(time.Since(start).Nanoseconds()) / batch
	}
	slices.Sort(per)
	return per[len(per)/2]
}

// BenchmarkParse measures parsing a schedule that is not cached.
func BenchmarkParse(b *testing.B) {
	for _, rc := range []struct{ name, text string }{
		{"daily", "DTSTART;TZID=Europe/Paris:20200101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16"},
		{"minutely-count-1e6", "DTSTART;TZID=Europe/Paris:20200101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=10;COUNT=1000000"},
	} {
		b.Run(rc.name, func(b *testing.B) {
			lim := Limits{MaxCount: 1_000_000}.orDefault()
			for b.Loop() {
				src, err := read(rc.text, time.UTC, &lim)
				if err == nil {
					_, err = src.build(0, &lim)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseWorst measures Parse, without the cache, of the costliest
// texts within the default limits, accepted or refused, and of the refused
// ones again with MaxBytes raised to 1 MiB (maxbytes-1MiB/...), so that
// the other limits refuse them; retained-B is the heap a parsed schedule
// keeps.
func BenchmarkParseWorst(b *testing.B) {
	type limited struct {
		name, text string
		lim        Limits
	}
	var cases []limited
	for _, c := range worstAccepted {
		cases = append(cases, limited{c.name, c.text, DefaultLimits})
	}
	for _, c := range worstRefused {
		cases = append(cases, limited{c.name, c.text, DefaultLimits})
	}
	for _, c := range worstRefused {
		cases = append(cases, limited{"maxbytes-1MiB/" + c.name, c.text, Limits{MaxBytes: 1 << 20}.orDefault()})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			lim := c.lim
			parse := func() (*Schedule, error) {
				if len(c.text) > lim.MaxBytes {
					return nil, limitErrorf("MaxBytes", "too long")
				}
				src, err := read(c.text, time.UTC, &lim)
				if err != nil {
					return nil, err
				}
				return src.build(0, &lim)
			}
			for b.Loop() {
				parse()
			}
			b.StopTimer()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s, err := parse()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(s)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "retained-B")
			if err != nil {
				b.Logf("refused: %.120s", err)
			}
		})
	}
}

// BenchmarkNextWorst measures Next on the costliest accepted schedules, at
// the times that take the most steps among those tried; steps is what
// that search took and bound what Parse allows it.
func BenchmarkNextWorst(b *testing.B) {
	for _, c := range worstAccepted {
		b.Run(c.name, func(b *testing.B) {
			s, err := Parse(c.text, Options{})
			if err != nil {
				b.Fatal(err)
			}
			// Times just after occurrences, and times over three
			// centuries.
			rng := rand.New(rand.NewPCG(1, 2))
			from := worstStart.Unix() - 10*secondsPerDay
			times := walkTimes(rng, s, from, from+1200*secondsPerDay)
			for range 3000 {
				times = append(times, from+rng.Int64N(300*365*secondsPerDay))
			}
			worst, most := int64(0), -1
			for _, at := range times {
				if _, _, steps := s.nextSteps(at); steps > most {
					worst, most = at, steps
				}
			}
			t := time.Unix(worst, 0)
			for b.Loop() {
				s.Next(t)
			}
			b.ReportMetric(float64(most), "steps")
			b.ReportMetric(float64(s.bound), "bound")
		})
	}
}

// BenchmarkMinGap measures MinGap over the next 1,000 occurrences (the
// minimum schedule interval of docs/transitions.md) of a common schedule and of the
// costliest accepted ones.
func BenchmarkMinGap(b *testing.B) {
	cases := append([]struct{ name, text string }{
		{"daily-6-16", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16"},
	}, worstAccepted...)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s, err := Parse(c.text, Options{})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s.MinGap(worstStart, 1000)
			}
		})
	}
}

// benchLimits let BenchmarkNext keep its COUNT=1000000 rule, above the
// default MaxCount.
var benchLimits = Limits{MaxCount: 1_000_000}

// typicalSchedules are schedules as most models have them.
var typicalSchedules = []struct{ name, text string }{
	{"daily-6-16", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16"},
	{"weekly-byday", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;BYHOUR=7;BYMINUTE=30"},
	{"monthly-bysetpos", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18"},
	{"3-rules-300-exdates", "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6\n" +
		"RRULE:FREQ=WEEKLY;BYDAY=SA;BYHOUR=12\nRRULE:FREQ=MONTHLY;BYMONTHDAY=1,15;BYHOUR=0\nEXDATE;TZID=Europe/Paris:" +
		strings.ReplaceAll(dateList(300, time.Date(2026, 2, 1, 6, 0, 0, 0, time.UTC)), "Z", "")},
}

// dateTimes matches the date-times of a schedule's text.
var dateTimes = regexp.MustCompile(`\d{8}T\d{6}`)

// shiftText returns text with each date-time moved by sec seconds, so
// that a schedule's variants are new texts of the same cost.
func shiftText(text string, sec int) string {
	return dateTimes.ReplaceAllStringFunc(text, func(v string) string {
		t, err := time.Parse("20060102T150405", v)
		if err != nil {
			panic(err)
		}
		return t.Add(time.Duration(sec) * time.Second).Format("20060102T150405")
	})
}

// BenchmarkColdNext measures what a scheduler pass pays when no schedule
// is cached: for 1,000 variants of a schedule (each shifted by another
// second, so that its text is new), Parse then Next once. max-us is the
// costliest variant (a pause of the machine or of the garbage collector
// included), p99-us the 99th percentile, total-ms the whole pass, refused
// how many Parse
// refused (the texts of worstRefused, timed to their refusal);
// retained-B is the heap one parsed variant keeps, cache entry
// included, and size-B what the cache counts for it.
func BenchmarkColdNext(b *testing.B) {
	cases := append(append(append([]struct{ name, text string }{}, typicalSchedules...), worstAccepted...), worstRefused...)
	now := time.Date(2026, 6, 15, 10, 17, 23, 0, time.UTC)
	const variants = 1000
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			texts := make([]string, variants)
			for i := range texts {
				texts[i] = shiftText(c.text, i)
			}
			var took []time.Duration
			var total time.Duration
			refused := 0
			for b.Loop() {
				b.StopTimer()
				schedules.reset()
				runtime.GC()
				b.StartTimer()
				refused = 0
				for _, text := range texts {
					start := time.Now()
					s, err := Parse(text, Options{Timezone: "Europe/Paris", Created: now})
					if err == nil {
						s.Next(now)
					} else {
						refused++
					}
					d := time.Since(start)
					took, total = append(took, d), total+d
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)-1].Microseconds()), "max-us")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-us")
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "total-ms")
			b.ReportMetric(float64(refused), "refused")
			b.ReportMetric(0, "ns/op")
			b.StopTimer()
			if refused > 0 {
				return
			}
			schedules.reset()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			kept := make([]*Schedule, 100)
			for i := range kept {
				kept[i], _ = Parse(shiftText(c.text, variants+i), Options{Timezone: "Europe/Paris", Created: now})
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(len(kept)), "retained-B")
			b.ReportMetric(float64(entryBytes(kept[0].key, kept[0])), "size-B")
			runtime.KeepAlive(kept)
			schedules.reset()
		})
	}
}
