package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

const limitsUsage = `usage: freshen limits <command> [flags] [args]

commands:
  list                          the concurrency limits: kind, key, max_running
  set KIND:KEY=N                create or replace a limit, e.g. queue:exports=5 or prefix:acme-=2
  delete KIND:KEY               remove a limit, e.g. queue:exports

A limit allows at most N current attempts among the models of a queue (kind queue)
or whose id starts with a prefix (kind prefix); a due model over a limit waits
(waiting_for_slot) and starts when a slot frees, by refresh_at then id. Limits live
in the database and apply to every instance. list needs a token with scope read,
set and delete one with scope admin; none may have an id prefix. Every command
takes --server (env FRESHEN_SERVER), --token (env FRESHEN_TOKEN) and --json.
`

// runLimits is `freshen limits <command>`: the concurrency limits, through
// the HTTP API.
func runLimits(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, limitsUsage)
		return 2
	}
	verb, args := args[0], args[1:]
	c := &clientCmd{name: "freshen limits " + verb, stdin: stdin, stdout: stdout, stderr: stderr}
	switch verb {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, limitsUsage)
		return 0
	case "list":
		c.flags("", "Lists the concurrency limits, by kind then key.")
		if _, code, ok := c.parse(args, 0, 0); !ok {
			return code
		}
		list, err := c.client.Limits(ctx)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(list)
			return 0
		}
		tw := newTable(c.stdout)
		tw.row("KIND", "KEY", "MAX_RUNNING")
		for _, l := range list.Limits {
			tw.row(l.Kind, l.Key, strconv.Itoa(l.MaxRunning))
		}
		tw.flush()
		return 0
	case "set":
		c.flags("KIND:KEY=N", "Creates or replaces the limit: at most N current attempts among the models it covers.")
		rest, code, ok := c.parse(args, 1, 1)
		if !ok {
			return code
		}
		l, err := parseLimit(rest[0])
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 2
		}
		got, err := c.client.PutLimit(ctx, l.Kind, l.Key, l.MaxRunning)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			c.printJSON(got)
			return 0
		}
		fmt.Fprintf(c.stdout, "%s %s: max_running %d\n", got.Kind, got.Key, got.MaxRunning)
		return 0
	case "delete":
		c.flags("KIND:KEY", "Removes the limit.")
		rest, code, ok := c.parse(args, 1, 1)
		if !ok {
			return code
		}
		kind, key, err := parseLimitKey(rest[0])
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 2
		}
		if err := c.client.DeleteLimit(ctx, kind, key); err != nil {
			return c.fail(err)
		}
		if !c.json {
			fmt.Fprintf(c.stdout, "deleted %s %s\n", kind, key)
		}
		return 0
	}
	fmt.Fprintf(stderr, "freshen limits: unknown command %q\n", verb)
	fmt.Fprint(stderr, limitsUsage)
	return 2
}

// parseLimitKey reads KIND:KEY, e.g. queue:exports or prefix:acme-.
func parseLimitKey(s string) (kind, key string, err error) {
	kind, key, ok := strings.Cut(s, ":")
	if !ok || (kind != refresh.LimitQueue && kind != refresh.LimitPrefix) || key == "" {
		return "", "", fmt.Errorf("%q: want queue:NAME or prefix:PREFIX", s)
	}
	return kind, key, nil
}

// parseLimit reads KIND:KEY=N, e.g. queue:exports=5 or prefix:acme-=2, and
// checks it (refresh.CheckLimit).
func parseLimit(s string) (refresh.Limit, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return refresh.Limit{}, fmt.Errorf("%q: want queue:NAME=N or prefix:PREFIX=N", s)
	}
	kind, key, err := parseLimitKey(s[:i])
	if err != nil {
		return refresh.Limit{}, fmt.Errorf("%q: want queue:NAME=N or prefix:PREFIX=N", s)
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return refresh.Limit{}, fmt.Errorf("%q: max_running must be an integer, got %q", s, s[i+1:])
	}
	l := refresh.Limit{Kind: kind, Key: key, MaxRunning: n}
	if err := refresh.CheckLimit(l); err != nil {
		return refresh.Limit{}, fmt.Errorf("%q: %w", s, err)
	}
	return l, nil
}

// limitsFlag is serve's --max-running, repeated: the limits to create when
// they do not exist yet.
type limitsFlag struct{ limits *[]refresh.Limit }

func (f limitsFlag) String() string {
	if f.limits == nil {
		return ""
	}
	var parts []string
	for _, l := range *f.limits {
		parts = append(parts, fmt.Sprintf("%s:%s=%d", l.Kind, l.Key, l.MaxRunning))
	}
	return strings.Join(parts, ",")
}

// Set adds the limits of s: one KIND:KEY=N, or several separated by
// commas (as an environment variable gives them).
func (f limitsFlag) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		l, err := parseLimit(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		*f.limits = append(*f.limits, l)
	}
	return nil
}

// seedLimits creates the limits that do not exist yet; existing ones,
// changed through the API, are kept.
func seedLimits(ctx context.Context, store refresh.Store, limits []refresh.Limit, log *slog.Logger) error {
	for _, l := range limits {
		created, err := store.PutLimit(ctx, l, true)
		if err != nil {
			return fmt.Errorf("seed limit %s:%s: %w", l.Kind, l.Key, err)
		}
		if created {
			log.Info("created concurrency limit", "kind", l.Kind, "key", l.Key, "max_running", l.MaxRunning)
		}
	}
	return nil
}
