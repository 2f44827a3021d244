package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/http/ui"
)

// withDashboard returns api with the dashboard mounted at /ui/: the same
// service, tokens (nil: none) and dead letters, and the queue depths and
// lifecycle events read from Redis under prefix.
func withDashboard(api http.Handler, svc *refresh.Service, auth *refreshhttp.Auth, dead refreshhttp.DeadLetters,
	client redis.UniversalClient, prefix string, log *slog.Logger) http.Handler {
	wire := wireReader{client: client, prefix: prefix}
	opts := []ui.Option{ui.WithLogger(log), ui.WithQueues(wire), ui.WithEvents(wire)}
	if auth != nil {
		opts = append(opts, ui.WithAuth(auth))
	}
	if dead != nil {
		opts = append(opts, ui.WithDeadLetters(dead))
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.New(svc, opts...))
	mux.Handle("/", api)
	return mux
}

// wireReader reads the queue depths and the events stream as any other
// service would, by the keys WIRE.md documents: P:jobs:<queue> and
// P:events.
type wireReader struct {
	client redis.UniversalClient
	prefix string
}

// key returns the Redis key named rest under the prefix, as WIRE.md
// spells it: "<prefix>:{<prefix>}:<rest>".
func (w wireReader) key(rest string) string {
	p := w.prefix
	if p == "" {
		p = queue.DefaultPrefix
	}
	return p + ":{" + p + "}:" + rest
}

// Depths returns the length of the jobs list of each queue, in one
// pipeline.
func (w wireReader) Depths(ctx context.Context, queues []string) (map[string]int64, error) {
	pipe := w.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.LLen(ctx, w.key("jobs:"+q))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(queues))
	for i, q := range queues {
		out[q] = cmds[i].Val()
	}
	return out, nil
}

// RecentEvents returns the latest events of the stream, newest first. A
// failure's two entries (failed, then retry_scheduled or disabled) carry
// one event, returned once.
func (w wireReader) RecentEvents(ctx context.Context, limit int) ([]refresh.Event, error) {
	msgs, err := w.client.XRevRangeN(ctx, w.key("events"), "+", "-", int64(2*limit)).Result()
	if err != nil {
		return nil, err
	}
	var out []refresh.Event
	last := ""
	for _, msg := range msgs {
		raw, _ := msg.Values["event"].(string)
		if raw == "" || raw == last {
			continue
		}
		last = raw
		var e refresh.Event
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue // not ours to judge; the stream is shared
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}
