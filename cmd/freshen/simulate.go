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

// runSimulate is `freshen simulate [-f spec.json] [--format json|table|mermaid]`.
func runSimulate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "spec file (JSON); standard input when empty")
	format := fs.String("format", "json", "output format: json, table or mermaid")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: freshen simulate [-f spec.json] [--format json|table|mermaid]\n\nRuns one model through the real scheduler loop on a virtual clock and prints its timeline.")
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
	if *format != "json" && *format != "table" && *format != "mermaid" {
		fmt.Fprintf(stderr, "freshen simulate: --format must be json, table or mermaid, got %q\n", *format)
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
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec(data, lim)
	if err != nil {
		fmt.Fprintf(stderr, "freshen simulate: invalid spec: %v\n", err)
		return 2
	}
	timeline, err := scenarios.Run(ctx, spec, lim)
	if err != nil {
		fmt.Fprintf(stderr, "freshen simulate: %v\n", err)
		return 1
	}
	switch *format {
	case "table":
		err = scenarios.WriteTable(stdout, timeline)
	case "mermaid":
		err = scenarios.WriteMermaid(stdout, spec.Model.ID, timeline)
	default:
		err = scenarios.WriteJSON(stdout, timeline)
	}
	if err != nil {
		fmt.Fprintf(stderr, "freshen simulate: %v\n", err)
		return 1
	}
	return 0
}
