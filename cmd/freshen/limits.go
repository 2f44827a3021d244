package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

const limitsUsage = `usage: freshen limits <command> [flags] [args]

commands:
  list                          the limits: kind, key, max_running, max_starts, per, burst
  set KIND:KEY=N                create or replace a concurrency limit, e.g. queue:exports=5 or prefix:acme-=2
  set KIND:KEY [--max-running N] [--max-starts N --per DURATION [--burst B]]
                                create or replace a limit with the fields given, e.g.
                                rate_key:api.example.com --max-starts 10 --per 1m --burst 2
  delete KIND:KEY               remove a limit, e.g. queue:exports

A limit covers the models of a queue (kind queue), those whose id starts with a
prefix (kind prefix) or those whose rate_key is its key (kind rate_key). It allows
at most max_running current attempts among them, and/or at most max_starts starts
in any window of per (from 1s to 24h), at most burst of them at once. A due model
that a limit holds back waits (waiting_for_slot) and starts as soon as the limit
admits it (docs/policy.md). Limits live in the database and apply to every
instance. list needs a token with scope read, set and delete one with scope admin;
none may have an id prefix. Every command takes --server (env FRESHEN_SERVER),
--token (env FRESHEN_TOKEN) and --json.
`

// runLimits is `freshen limits <command>`: the limits, through the HTTP
// API.
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
		c.flags("", "Lists the limits, by kind then key.")
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
		tw.row("KIND", "KEY", "MAX_RUNNING", "MAX_STARTS", "PER", "BURST")
		for _, l := range list.Limits {
			per := "-"
			if l.Per > 0 {
				per = l.Per.String()
			}
			tw.row(l.Kind, l.Key, orDash(l.MaxRunning), orDash(l.MaxStarts), per, orDash(l.Burst))
		}
		tw.flush()
		return 0
	case "set":
		return c.limitsSet(ctx, args)
	case "delete":
		c.flags("KIND:KEY", "Removes the limit; the models waiting for it start as if it never was.")
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

// limitsSet is `freshen limits set`: KIND:KEY=N (a concurrency limit), or
// KIND:KEY with the flags of the fields to set.
func (c *clientCmd) limitsSet(ctx context.Context, args []string) int {
	fs := c.flags("KIND:KEY=N | KIND:KEY [--max-running N] [--max-starts N --per DURATION [--burst B]]",
		"Creates or replaces the limit: at most N (--max-running) current attempts among the models it covers,\n"+
			"and/or at most --max-starts starts in any window of --per, at most --burst of them at once.\n"+
			"A field left out is unset, whatever the limit had.")
	var l refresh.Limit
	fs.IntVar(&l.MaxRunning, "max-running", 0, "at most this many current attempts")
	fs.IntVar(&l.MaxStarts, "max-starts", 0, "at most this many starts in any window of --per")
	fs.Var(durationFlag{&l.Per}, "per", `the window of --max-starts, from 1s to 24h, e.g. 1m or PT1M`)
	fs.IntVar(&l.Burst, "burst", 0, "at most this many starts at once (1 to 10000; default: up to --max-starts)")
	rest, code, ok := c.parse(args, 1, 1)
	if !ok {
		return code
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	if !given["max-running"] && !given["max-starts"] && !given["per"] && !given["burst"] {
		l, err = parseLimit(rest[0])
	} else {
		l.Kind, l.Key, err = parseLimitKey(rest[0])
		for _, f := range []struct {
			name string
			n    int
		}{{"max-running", l.MaxRunning}, {"max-starts", l.MaxStarts}, {"burst", l.Burst}} {
			if err == nil && given[f.name] && f.n < 1 {
				err = fmt.Errorf("--%s: must be >= 1, got %d", f.name, f.n)
			}
		}
		if err == nil {
			err = refresh.CheckLimit(l)
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", c.name, err)
		return 2
	}
	got, err := c.client.PutLimit(ctx, l)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(got)
		return 0
	}
	fmt.Fprintln(c.stdout, got.String())
	return 0
}

// orDash writes n, or "-" for 0 (unset).
func orDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// durationFlag is a flag holding a refresh.Duration, in Go syntax or ISO
// 8601.
type durationFlag struct{ d *refresh.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := refresh.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// limitKinds says which KIND:KEY forms a limit takes.
const limitKinds = "queue:NAME, prefix:PREFIX or rate_key:KEY"

// parseLimitKey reads KIND:KEY, e.g. queue:exports, prefix:acme- or
// rate_key:api.example.com.
func parseLimitKey(s string) (kind, key string, err error) {
	kind, key, ok := strings.Cut(s, ":")
	if !ok || (kind != refresh.LimitQueue && kind != refresh.LimitPrefix && kind != refresh.LimitRateKey) || key == "" {
		return "", "", fmt.Errorf("%q: want %s", s, limitKinds)
	}
	return kind, key, nil
}

// parseLimit reads KIND:KEY=N, a concurrency limit of N, e.g.
// queue:exports=5 or prefix:acme-=2, and checks it (refresh.CheckLimit).
func parseLimit(s string) (refresh.Limit, error) {
	want := fmt.Errorf("%q: want queue:NAME=N, prefix:PREFIX=N or rate_key:KEY=N", s)
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return refresh.Limit{}, want
	}
	kind, key, err := parseLimitKey(s[:i])
	if err != nil {
		return refresh.Limit{}, want
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
