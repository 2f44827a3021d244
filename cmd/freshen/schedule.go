package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/freshen-dev/freshen/rrule"
)

const maxScheduleCount = 10000

// runSchedule is `freshen schedule --schedule TEXT [--timezone ZONE]
// [--created TIME] --after TIME [--count N] [--format json|text] [--max-...
// N]`: it prints the next occurrences of a schedule, as the scheduler
// computes them. The --max flags set rrule.Limits (0 keeps a default).
func runSchedule(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	fs.SetOutput(stderr)
	text := fs.String("schedule", "", "RFC 5545 text (DTSTART, RRULE, RDATE, EXDATE lines) or a bare RRULE body (required)")
	zone := fs.String("timezone", "", "IANA zone of a bare RRULE body or a floating DTSTART (default UTC)")
	createdFlag := fs.String("created", "", "creation time (RFC 3339); a schedule without DTSTART starts at 00:00 of that day in --timezone (default: --after)")
	afterFlag := fs.String("after", "", "print occurrences strictly after this time (RFC 3339, required)")
	count := fs.Int("count", 5, fmt.Sprintf("number of occurrences to print (1 to %d)", maxScheduleCount))
	format := fs.String("format", "json", "output format: json (an array of RFC 3339 UTC times) or text")
	var lim rrule.Limits
	d := rrule.DefaultLimits
	fs.IntVar(&lim.MaxBytes, "max-bytes", 0, fmt.Sprintf("largest schedule text in bytes (0: %d)", d.MaxBytes))
	fs.IntVar(&lim.MaxRules, "max-rules", 0, fmt.Sprintf("most RRULE lines (0: %d)", d.MaxRules))
	fs.IntVar(&lim.MaxRDates, "max-rdates", 0, fmt.Sprintf("most RDATE values (0: %d)", d.MaxRDates))
	fs.IntVar(&lim.MaxExDates, "max-exdates", 0, fmt.Sprintf("most EXDATE values (0: %d)", d.MaxExDates))
	fs.IntVar(&lim.MaxCount, "max-count", 0, fmt.Sprintf("largest COUNT, summed over the rules (0: %d)", d.MaxCount))
	fs.IntVar(&lim.MaxSteps, "max-steps", 0, fmt.Sprintf("most work to find one occurrence, in steps (0: %d)", d.MaxSteps))
	fs.IntVar(&lim.MaxParseSteps, "max-parse-steps", 0, fmt.Sprintf("most work to read the schedule and bound its searches, in steps (0: %d)", d.MaxParseSteps))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: freshen schedule --schedule TEXT [--timezone ZONE] [--created TIME] --after TIME [--count N] [--format json|text] [--max-... N]\n\nPrints the next occurrences of a schedule strictly after a time.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "freshen schedule: "+format+"\n", a...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case *text == "":
		return fail("--schedule is required")
	case *afterFlag == "":
		return fail("--after is required")
	case *count < 1 || *count > maxScheduleCount:
		return fail("--count must be between 1 and %d, got %d", maxScheduleCount, *count)
	case *format != "json" && *format != "text":
		return fail("--format must be json or text, got %q", *format)
	}
	after, err := time.Parse(time.RFC3339, *afterFlag)
	if err != nil {
		return fail("--after must be an RFC 3339 time like 2026-03-29T06:00:00Z, got %q", *afterFlag)
	}
	created := after
	if *createdFlag != "" {
		if created, err = time.Parse(time.RFC3339, *createdFlag); err != nil {
			return fail("--created must be an RFC 3339 time like 2026-03-01T00:00:00Z, got %q", *createdFlag)
		}
	}
	if _, err := rrule.Parse("FREQ=DAILY", rrule.Options{Timezone: *zone}); err != nil {
		return fail("invalid --timezone: %v", err)
	}
	s, err := rrule.Parse(*text, rrule.Options{Timezone: *zone, Created: created, Limits: lim})
	if err != nil {
		return fail("invalid --schedule: %v", err)
	}

	var times []time.Time
	for t := after; len(times) < *count; {
		next, ok := s.Next(t)
		if !ok {
			break
		}
		times = append(times, next)
		t = next
	}
	if *format == "text" {
		for _, t := range times {
			fmt.Fprintf(stdout, "%s  (%s)\n", t.Format(time.RFC3339), t.UTC().Format(time.RFC3339))
		}
		return 0
	}
	out := make([]string, len(times))
	for i, t := range times {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	data, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintf(stderr, "freshen schedule: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", data)
	return 0
}
