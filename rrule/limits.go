package rrule

import "fmt"

// Limits bound what one schedule may cost, so that a small text can never
// make Parse, Next or First slow or large. A zero field means its default.
// Parse refuses a schedule beyond a limit with a *LimitError naming the
// part and the limit, e.g. "RRULE: at most 100 rules per schedule, got
// 5000".
//
// With the default limits, Parse of any text takes about a millisecond at
// most, refused or not, and a parsed schedule keeps at most some 400 KB of
// tables (4 bytes per step of MaxParseSteps), plus about a kilobyte per
// RRULE and 16 bytes per byte of its text; Next and First of every
// accepted schedule take well under a millisecond (see bench_test.go:
// BenchmarkColdNext, BenchmarkParseWorst, BenchmarkNextWorst).
type Limits struct {
	// MaxBytes bounds the length of the text (default 64 KiB).
	MaxBytes int
	// MaxRules bounds the number of RRULE lines (default 100).
	MaxRules int
	// MaxRDates bounds the number of RDATE values (default 1,000).
	MaxRDates int
	// MaxExDates bounds the number of EXDATE values (default 1,000).
	MaxExDates int
	// MaxCount bounds COUNT, and its sum over the rules of a schedule
	// (default 100,000). Parse finds the last occurrence of a COUNT rule
	// by arithmetic when all its periods are alike (no day filter for
	// DAILY and finer, no BYMONTH for WEEKLY), a month at a time for a
	// DAILY rule with a day filter, and otherwise by walking its periods
	// from DTSTART; all count against MaxParseSteps.
	MaxCount int
	// MaxSteps bounds the work of finding one occurrence (default
	// 50,000 steps). A step is looking at one period, month or slot
	// word, or about 10 ns of work; placing a wall time on the time line
	// counts 16. Parse computes, from the rules' structure and the
	// calendar's 400-year cycle, how many steps Next or First may take at
	// most, over every rule, RDATE and EXDATE, and refuses the schedule if
	// that is more than MaxSteps, so every accepted schedule answers
	// within it.
	MaxSteps int
	// MaxParseSteps bounds the work of Parse itself (default 100,000
	// steps: about a millisecond), counted in steps like MaxSteps:
	// reading the text (a step per 2 bytes and 80 per RRULE), building
	// each rule's tables (a few hundred steps for a table of days, and a
	// step per 4 bytes of table the schedule keeps), checking over the
	// calendar's cycle how long a search may take, counting a COUNT rule
	// from DTSTART, and finding for each EXDATE that removes an occurrence
	// the next one that stays. Rules of a schedule with the same day
	// filter, or the same times and INTERVAL, share their tables and pay
	// for them once. Parse stops and refuses the schedule as soon as its
	// count would pass the limit, so that a schedule costs at most this
	// much to parse, accepted or not, and keeps at most 4 bytes of tables
	// per step. A few RRULEs with a few BYxxx parts each and hundreds of
	// EXDATEs take a few thousand to a few tens of thousands of steps;
	// raising MaxCount, MaxRules or MaxExDates may call for raising this
	// limit too.
	MaxParseSteps int
}

// DefaultLimits are the limits Parse applies when Options.Limits leaves a
// field zero.
var DefaultLimits = Limits{
	MaxBytes:   64 << 10,
	MaxRules:   100,
	MaxRDates:  1000,
	MaxExDates: 1000,
	MaxCount:   100_000,
	MaxSteps:   50_000,

	MaxParseSteps: 100_000,
}

// orDefault returns l with its zero fields set to their defaults.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxBytes, d.MaxBytes)
	set(&l.MaxRules, d.MaxRules)
	set(&l.MaxRDates, d.MaxRDates)
	set(&l.MaxExDates, d.MaxExDates)
	set(&l.MaxCount, d.MaxCount)
	set(&l.MaxSteps, d.MaxSteps)
	set(&l.MaxParseSteps, d.MaxParseSteps)
	return l
}

// LimitError reports a schedule beyond one of its Limits.
type LimitError struct {
	// Limit names the field of Limits, e.g. "MaxRules".
	Limit string
	msg   string
}

func (e *LimitError) Error() string { return e.msg }

func limitErrorf(limit, format string, a ...any) *LimitError {
	return &LimitError{Limit: limit, msg: fmt.Sprintf(format, a...)}
}
