package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reliable consumption, shared by the outcome consumer (Redis) and the
// workers (Worker): a taker moves each message from a source list to a list
// of its own, and a sorted set records when each taker was last seen. The
// lists of takers not seen since a cutoff are moved back onto the source.

// move registers member as seen at now and moves up to max messages from
// source to taken, oldest first, while they add up to at most bytes (the
// first one whatever its size).
func move(ctx context.Context, c redis.Scripter, source, taken, set, member string, max, bytes int, now time.Time) ([]string, error) {
	res, err := moveScript.Run(ctx, c, []string{source, taken, set}, max, bytes, now.UnixMilli(), member).StringSlice()
	if err != nil && err != redis.Nil {
		return nil, err
	}
	return res, nil
}

// blmove waits up to timeout for a message on the right end of source and
// moves it to the end "LEFT" or "RIGHT" of dest. It returns redis.Nil if
// none came. With dest the source and end "RIGHT", it waits for a message
// without taking it. Redis counts the timeout in seconds with decimals;
// go-redis' BLMove rounds it down to whole seconds (at least one), so
// shorter timeouts are sent as they are.
func blmove(ctx context.Context, c redis.UniversalClient, source, dest, end string, timeout time.Duration) (string, error) {
	if timeout >= time.Second {
		return c.BLMove(ctx, source, dest, "RIGHT", end, timeout).Result()
	}
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64)
	cmd := redis.NewStringCmd(ctx, "blmove", source, dest, "RIGHT", end, secs)
	_ = c.Process(ctx, cmd)
	return cmd.Result()
}

// requeue moves everything in taken back onto the right (next to be taken)
// end of source and forgets member. With a non-zero cutoff it leaves a
// member seen after cutoff alone and returns -1.
func requeue(ctx context.Context, c redis.Scripter, taken, source, set, member string, cutoff time.Time) (int, error) {
	arg := ""
	if !cutoff.IsZero() {
		arg = strconv.FormatInt(cutoff.UnixMilli(), 10)
	}
	n, err := requeueScript.Run(ctx, c, []string{taken, source, set}, member, arg).Int()
	if err != nil {
		return 0, fmt.Errorf("requeue %s: %w", taken, err)
	}
	return n, nil
}

// recoverDead requeues the taken list of every member of set last seen at
// or before cutoff, except self, and returns how many messages it moved.
func recoverDead(ctx context.Context, c redis.UniversalClient, set, source string, takenKey func(string) string, self string, cutoff time.Time) (int, error) {
	ids, err := c.ZRangeByScore(ctx, set, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff.UnixMilli(), 10),
	}).Result()
	if err != nil {
		return 0, fmt.Errorf("list dead takers: %w", err)
	}
	total := 0
	for _, id := range ids {
		if id == self {
			continue
		}
		n, err := requeue(ctx, c, takenKey(id), source, set, id, cutoff)
		if err != nil {
			return total, err
		}
		total += max(n, 0)
	}
	return total, nil
}
