package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/scenarios"
)

// replayAttempts is how many of a model's newest attempts a replay reads
// at most, replayPage at a time (the most one request of the API returns):
// a replay stops at 10,000 timeline entries anyway. A period with more is
// replayed from the oldest attempt read, and the output says so.
const (
	replayAttempts = 10_000
	replayPage     = 1000
)

// replayFlags are the flags of `freshen simulate --model`.
type replayFlags struct {
	model, policy, since, until string
}

// define adds the replay's flags to fs; --server and --token go to c.
func (r *replayFlags) define(fs *flag.FlagSet, c *clientCmd) {
	fs.StringVar(&r.model, "model", "", "replay this model's recorded history (read from the API) instead of a spec")
	fs.StringVar(&r.policy, "policy", "", "with --model: file of the proposed policy (JSON); - reads stdin")
	fs.StringVar(&r.since, "since", "P30D", "with --model: how far back the period starts (a duration such as P30D or 72h, at most P366D)")
	fs.StringVar(&r.until, "until", "", "with --model: end of the period (RFC 3339; default now)")
	fs.StringVar(&c.server, "server", "", "with --model: URL of the API (env FRESHEN_SERVER, default "+defaultServer+")")
	fs.StringVar(&c.token, "token", "", "with --model: bearer token (env FRESHEN_TOKEN, which is safer: an argument shows in the process list)")
}

// set reports whether a flag that goes only with --model was given.
func (r *replayFlags) set(fs *flag.FlagSet) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "since", "until", "server", "token":
			found = true
		}
	})
	return found
}

// runReplay is `freshen simulate --model ID --policy FILE [--since P30D]
// [--until TIME]`: it reads the model and its newest attempts from the API,
// replays the period under the policy of FILE (scenarios.RunReplay) with
// the global limits lim (the limit flags, as the server's) and prints the
// recorded and the replayed timelines side by side in format.
// Bad flags and an invalid policy exit with status 2 before any request; a
// model not found, a refused token or a period without attempts with 1.
func runReplay(ctx context.Context, c *clientCmd, args []string, r replayFlags, lim refresh.Limits, format string, maxEntries int) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(c.stderr, "freshen simulate: "+format+"\n", a...)
		return 2
	}
	switch {
	case r.model == "":
		return bad("--model: is required with --policy")
	case !refresh.ValidID(r.model):
		return bad("--model: %s", refresh.IDRule)
	case r.policy == "":
		return bad("--policy: is required with --model (a file of the proposed policy, or - for stdin)")
	}
	since, err := refresh.ParseDuration(r.since)
	switch {
	case err != nil || since <= 0:
		return bad("--since: must be a duration > 0 such as P30D or 720h, got %q", r.since)
	case time.Duration(since) > scenarios.MaxReplaySpan:
		return bad("--since: must be at most P%dD, got %q", scenarios.MaxReplaySpan/(24*time.Hour), r.since)
	}
	until := time.Now().UTC().Truncate(time.Second)
	if r.until != "" {
		if until, err = time.Parse(time.RFC3339, r.until); err != nil {
			return bad("--until: must be an RFC 3339 time such as 2026-03-12T00:00:00Z, got %q", r.until)
		}
	}
	var policy []byte
	if r.policy == "-" {
		policy, err = io.ReadAll(c.stdin)
	} else {
		policy, err = os.ReadFile(r.policy)
	}
	if err != nil {
		return bad("--policy: %v", err)
	}
	if _, err := refresh.ParsePolicy(policy, lim); err != nil {
		return bad("invalid policy (--policy %s): %v", r.policy, err)
	}
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}

	m, err := c.client.Get(ctx, r.model)
	if err != nil {
		return c.fail(err)
	}
	rec := scenarios.Recording{
		Model: refresh.Model{ID: m.ID, Queue: m.Queue, Payload: m.Payload, Policy: m.Policy, CreatedAt: time.Time(m.CreatedAt),
			State: refresh.State{DisabledAt: time.Time(m.DisabledAt), DisabledReason: string(m.DisabledReason)}},
		Since: until.Add(-time.Duration(since)), Until: until,
	}
	// Pages of the newest attempts, until one started before the period
	// (the replay needs the latest attempt at or before its start) or
	// there are no more.
	for next := ""; ; {
		list, err := c.client.Attempts(ctx, r.model, next, replayPage)
		if err != nil {
			return c.fail(err)
		}
		for _, a := range list.Attempts {
			rec.Attempts = append(rec.Attempts, recordedAttempt(m.ID, a))
		}
		n := len(rec.Attempts)
		if list.Next == "" || n > 0 && rec.Attempts[n-1].StartedAt.Before(rec.Since) {
			break
		}
		if n >= replayAttempts {
			rec.Truncated = true
			break
		}
		next = list.Next
	}
	res, err := scenarios.RunReplay(ctx, rec, policy, lim, scenarios.WithMaxEntries(maxEntries))
	var none *scenarios.NoHistoryError
	switch {
	case errors.As(err, &none):
		fmt.Fprintf(c.stderr, "freshen simulate: %v\n", err)
		return 1
	case refresh.ErrorCode(err) == refresh.EINVALID:
		return bad("%v", err)
	}
	if code, done := simulateFailed(ctx, c.stderr, err); done {
		return code
	}
	switch format {
	case "table":
		err = scenarios.WriteReplayTable(c.stdout, res)
	case "mermaid":
		err = scenarios.WriteReplayMermaid(c.stdout, res)
	default:
		err = scenarios.WriteReplayJSON(c.stdout, res)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "freshen simulate: %v\n", err)
		return 1
	}
	return 0
}

// recordedAttempt returns the history row of the API's attempt a.
func recordedAttempt(id string, a refreshhttp.Attempt) refresh.Attempt {
	out := refresh.Attempt{ModelID: id, UID: a.UID, AttemptNo: a.AttemptNo, StartedAt: time.Time(a.StartedAt),
		DeadlineAt: time.Time(a.DeadlineAt), FinishedAt: time.Time(a.FinishedAt), Outcome: string(a.Outcome),
		ErrorKind: a.ErrorKind, ErrorMessage: a.ErrorMessage, Decision: a.Decision}
	if a.Delay != nil {
		out.Delay = time.Duration(*a.Delay)
	}
	return out
}
