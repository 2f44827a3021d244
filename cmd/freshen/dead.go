package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

const deadUsage = `usage: freshen dead <command> [flags] [args]

commands:
  list [--all]                  dead letters, newest first: id, when, where a requeue puts it, reason, message
  requeue ID...|--all           put dead letters back on the list they came from
  drop ID...|--all              remove dead letters

Dead letters are the messages serve or a worker set aside because they broke a
rule of queue/WIRE.md. The commands need a token with scope admin and no prefix.
Every command takes --server (env FRESHEN_SERVER), --token (env FRESHEN_TOKEN)
and --json.
`

// runDead is `freshen dead <command>`: the dead-letter list, through the
// HTTP API.
func runDead(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, deadUsage)
		return 2
	}
	verb, args := args[0], args[1:]
	c := &clientCmd{name: "freshen dead " + verb, stdin: stdin, stdout: stdout, stderr: stderr}
	switch verb {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, deadUsage)
		return 0
	case "list":
		return c.deadList(ctx, args)
	case "requeue", "drop":
		return c.deadMove(ctx, verb, args)
	}
	fmt.Fprintf(stderr, "freshen dead: unknown command %q\n", verb)
	fmt.Fprint(stderr, deadUsage)
	return 2
}

func (c *clientCmd) deadList(ctx context.Context, args []string) int {
	fs := c.flags("", "Lists dead letters, newest first, one page (--limit) or all of them (--all).\nTimes are UTC; LIST is where a requeue puts the message back (- when it cannot).")
	after := fs.String("after", "", "start after this cursor (the next of a previous page)")
	limit := fs.Int("limit", 0, "dead letters per page (1 to 1000; default the server's, 100)")
	all := fs.Bool("all", false, "follow the pages to the end")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	var list refreshhttp.DeadList
	for {
		page, err := c.client.DeadLetters(ctx, *after, *limit)
		if err != nil {
			return c.fail(err)
		}
		list.Dead = append(list.Dead, page.Dead...)
		list.Next = page.Next
		if !*all || page.Next == "" {
			break
		}
		*after = page.Next
	}
	if list.Dead == nil {
		list.Dead = []refreshhttp.DeadLetter{}
	}
	if c.json {
		c.printJSON(list)
		return 0
	}
	tw := newTable(c.stdout)
	tw.row("ID", "AT", "LIST", "REASON", "MESSAGE")
	for _, d := range list.Dead {
		tw.row(d.ID, formatTime(d.At, time.UTC), dash(string(d.List)), cut(d.Reason, 60), cut(d.Message, 60))
	}
	tw.flush()
	if list.Next != "" {
		fmt.Fprintf(c.stdout, "more: --after %s (or --all)\n", list.Next)
	}
	return 0
}

func (c *clientCmd) deadMove(ctx context.Context, verb string, args []string) int {
	summary := "Puts each dead letter back on the list it came from, oldest first, where it is taken\nas a new message; entries that cannot be requeued stay."
	if verb == "drop" {
		summary = "Removes each dead letter."
	}
	fs := c.flags("ID...|--all", summary)
	all := fs.Bool("all", false, "every dead letter")
	ids, code, ok := c.parse(args, 0, -1)
	if !ok {
		return code
	}
	if *all == (len(ids) > 0) {
		fmt.Fprintf(c.stderr, "%s: give dead-letter ids or --all\n", c.name)
		return 2
	}
	var (
		done    int
		missing []string
		refused []refreshhttp.DeadRefusal
		out     any
		err     error
	)
	if verb == "requeue" {
		var res refreshhttp.RequeueResult
		if *all {
			res, err = c.client.RequeueAllDead(ctx)
		} else {
			res, err = c.client.RequeueDead(ctx, ids)
		}
		done, missing, refused, out = res.Requeued, res.Missing, res.Refused, res
	} else {
		var res refreshhttp.DropResult
		if *all {
			res, err = c.client.DropAllDead(ctx)
		} else {
			res, err = c.client.DropDead(ctx, ids)
		}
		done, missing, out = res.Dropped, res.Missing, res
	}
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.printJSON(out)
	} else {
		past := map[string]string{"requeue": "requeued", "drop": "dropped"}[verb]
		fmt.Fprintf(c.stdout, "%s %d\n", past, done)
		if len(missing) > 0 {
			fmt.Fprintf(c.stdout, "not on the list: %s\n", strings.Join(missing, ", "))
		}
		for _, r := range refused {
			fmt.Fprintf(c.stdout, "left on the list: %s: %s\n", r.ID, r.Reason)
		}
	}
	if !*all && (len(missing) > 0 || len(refused) > 0) {
		return 1 // an id given was not handled
	}
	return 0
}
