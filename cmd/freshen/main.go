// Command freshen is Freshen's one binary. Each subcommand lives in a file of
// its own beside this one.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	_ "time/tzdata" // zone rules even where the host has none
)

// command is one subcommand: it parses its own flags from args and returns
// the process exit status (2 for bad input or usage). Every command prints
// its usage on stderr, and -h or --help exits 0.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		// Subcommands are added here, one line each.
		{"simulate", "run one model through the scheduler on a virtual clock and print its timeline", runSimulate},
		{"migrate", "apply the database migrations", runMigrate},
		{"serve", "run the scheduler, the outcome consumer and the HTTP API", runServe},
		{"demo", "run the scheduler on an embedded in-memory store and Redis with a demo worker", runDemo},
		{"bench", "measure starts/s, outcomes/s, lateness and memory on real PostgreSQL and Redis", runBench},
		{"schedule", "print the next occurrences of a schedule", runSchedule},
		{"models", "list, show, change and act on models through the HTTP API", runModels},
		{"dead", "list, requeue and drop dead letters through the HTTP API", runDead},
		{"limits", "list, set and delete concurrency and rate limits through the HTTP API", runLimits},
		{"token", "make a bearer token for the API, or hash one", runToken},
		{"work", "take the jobs of a queue and run a command for each", runWork},
		{"conformance", "check that a worker command keeps the wire format's contract", runConformance},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help" {
		usage(stderr)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "freshen: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: freshen <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'freshen <command> -h' for a command's flags.")
}
