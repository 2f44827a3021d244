package rrule

import "fmt"

// Limits bound what one schedule may cost, so that a small text can never
// make Parse, Next or First slow or large. A zero field means its default.
// Parse refuses a schedule beyond a limit with a *LimitError naming the
// part and the limit, e.g. "RRULE: at most 100 rules per schedule, got
// 5000".
//
// With the default limits, Parse of any text takes well under 100 ms and
// keeps well under 16 MB, refused or not, and Next and First of every
// accepted schedule take well under a millisecond (see bench_test.go).
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
	// (default 100,000). Parse walks each COUNT rule from DTSTART to its
	// last occurrence; a walk that needs more than 16 steps per counted
	// occurrence (a sparse rule) is refused too.
	MaxCount int
	// MaxSteps bounds the work of finding one occurrence (default
	// 50,000 steps). A step is looking at one period, month or slot
	// word, or about 10 ns of work; placing a wall time on the time line
	// counts 16. Parse computes, from the rules' structure and the
	// calendar's 400-year cycle, how many steps Next or First may take at
	// most, over every rule, RDATE and EXDATE, and refuses the schedule if
	// that is more than MaxSteps, so every accepted schedule answers
	// within it. Checking a rule whose INTERVAL skips over its filters in
	// an irregular way, and checking the EXDATEs, may take up to 8 and 64
	// times MaxSteps at Parse.
	MaxSteps int
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
