package queue

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
)

// Depths returns how many jobs wait on each of queues, in one pipeline.
func (r *Redis) Depths(ctx context.Context, queues []string) (map[string]int64, error) {
	pipe := r.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.LLen(ctx, r.keys.jobsKey(q))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("queue depths: %w", err)
	}
	out := make(map[string]int64, len(queues))
	for i, q := range queues {
		out[q] = cmds[i].Val()
	}
	return out, nil
}

// RecentEvents returns up to limit of the latest lifecycle events of the
// stream, newest first. A failure's two entries (failed, then
// retry_scheduled or disabled) carry one event, returned once; an entry
// that is not an event of this version is passed over.
func (r *Redis) RecentEvents(ctx context.Context, limit int) ([]refresh.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	msgs, err := r.client.XRevRangeN(ctx, r.keys.eventsKey(), "+", "-", int64(2*limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("recent events: %w", err)
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
			continue
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}
