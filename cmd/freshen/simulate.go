package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

const simulateUsage = `usage: freshen simulate [-f spec.json] [--format json|table|mermaid] [--max-entries N]
       freshen simulate --model ID --policy FILE [--since P30D] [--until TIME] [--format ...]
                        [--server URL] [--token TOKEN]

Runs one model (or several, with upstreams) through the real scheduler loop on a virtual
clock and prints its timeline.
With --model, replays the model's recorded attempts of the period (read from the API)
under the policy of FILE, beside what really happened.
The global limits (--max-retries, --min-interval, ...) are those of freshen serve, with
the same flags and defaults: give simulate the limit flags your server runs with.`

// runSimulate is `freshen simulate [-f spec.json] [--format json|table|mermaid]
// [--max-entries N]`, or with --model the replay of a model's history
// (runReplay). It stops at once on SIGINT or SIGTERM (exit status 130),
// and refuses a spec whose timeline would exceed N entries (exit status 2).
func runSimulate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "spec file (JSON); standard input when empty")
	format := fs.String("format", "json", "output format: json, table or mermaid")
	maxEntries := fs.Int("max-entries", scenarios.DefaultMaxEntries, "most timeline entries to produce; a spec that needs more is refused (exit status 2)")
	c := &clientCmd{name: "freshen simulate", stdin: stdin, stdout: stdout, stderr: stderr, fs: fs}
	var r replayFlags
	r.define(fs, c)
	var lim refresh.Limits
	limitFlags(fs, &lim)
	fs.Usage = func() {
		fmt.Fprintln(stderr, simulateUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "freshen simulate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *maxEntries < 1 {
		fmt.Fprintf(stderr, "freshen simulate: --max-entries: must be >= 1, got %d\n", *maxEntries)
		return 2
	}
	if *format != "json" && *format != "table" && *format != "mermaid" {
		fmt.Fprintf(stderr, "freshen simulate: --format must be json, table or mermaid, got %q\n", *format)
		return 2
	}
	if err := checkLimits(lim); err != nil {
		fmt.Fprintf(stderr, "freshen simulate: %v\n", err)
		return 2
	}
	if r.model != "" || r.policy != "" {
		if *file != "" {
			fmt.Fprintln(stderr, "freshen simulate: -f goes without --model (a spec, or a replay, not both)")
			return 2
		}
		return runReplay(ctx, c, args, r, lim, *format, *maxEntries)
	}
	if r.set(fs) {
		fmt.Fprintln(stderr, "freshen simulate: --since, --until, --server and --token go with --model")
		return 2
	}
	var data []byte
	var err error
	if *file == "" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "freshen simulate: %v\n", err)
		return 2
	}
	spec, err := scenarios.ParseSpec(data, lim)
	if err != nil {
		fmt.Fprintf(stderr, "freshen simulate: invalid spec: %v\n", err)
		return 2
	}
	timeline, err := scenarios.Run(ctx, spec, lim, scenarios.WithMaxEntries(*maxEntries))
	if code, done := simulateFailed(ctx, stderr, err); done {
		return code
	}
	switch *format {
	case "table":
		err = scenarios.WriteTable(stdout, timeline)
	case "mermaid":
		err = scenarios.WriteMermaid(stdout, spec.Title(), timeline)
	default:
		err = scenarios.WriteJSON(stdout, timeline)
	}
	if err != nil {
		fmt.Fprintf(stderr, "freshen simulate: %v\n", err)
		return 1
	}
	return 0
}

// simulateFailed prints the error of a run, if any, and returns the exit
// status: 2 for a timeline over its limit, 130 when interrupted, else 1.
func simulateFailed(ctx context.Context, stderr io.Writer, err error) (int, bool) {
	var tooLong *scenarios.EntriesError
	switch {
	case err == nil:
		return 0, false
	case errors.As(err, &tooLong):
		fmt.Fprintf(stderr, "freshen simulate: %v (--max-entries %d)\n", err, tooLong.Limit)
		return 2, true
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "freshen simulate: interrupted")
		return 130, true
	}
	fmt.Fprintf(stderr, "freshen simulate: %v\n", err)
	return 1, true
}
