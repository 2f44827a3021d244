package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// TrimDead drops the oldest entries of the dead-letter list beyond max (>
// 0), counts them in Stats.Trimmed and returns how many it dropped. It
// bounds the entries workers set aside, which do not trim the list. An
// entry dropped while someone pages through the list (DeadLetters) shifts
// the pages that follow, so an entry may then show on two pages.
func (r *Redis) TrimDead(ctx context.Context, max int64) (int64, error) {
	if max <= 0 {
		return 0, fmt.Errorf("trim dead letters: max: must be > 0, got %d", max)
	}
	n, err := trimDeadScript.Run(ctx, r.client, []string{r.keys.deadKey()}, max).Int64()
	if err != nil {
		return 0, fmt.Errorf("trim dead letters: %w", err)
	}
	r.stats.trimmed.Add(n)
	return n, nil
}

// Lengths are the lengths of the lists of a Redis at one time.
type Lengths struct {
	// Jobs is how many jobs wait on each queue asked for.
	Jobs map[string]int64
	// Outcomes is how many outcomes wait for a consumer.
	Outcomes int64
	// Dead is the length of the dead-letter list.
	Dead int64
}

// Lengths returns the lengths of the jobs lists of queues, of the outcomes
// list and of the dead-letter list, in one pipeline.
func (r *Redis) Lengths(ctx context.Context, queues []string) (Lengths, error) {
	pipe := r.client.Pipeline()
	jobs := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		jobs[i] = pipe.LLen(ctx, r.keys.jobsKey(q))
	}
	outcomes := pipe.LLen(ctx, r.keys.outcomesKey())
	dead := pipe.LLen(ctx, r.keys.deadKey())
	if _, err := pipe.Exec(ctx); err != nil {
		return Lengths{}, fmt.Errorf("list lengths: %w", err)
	}
	l := Lengths{Jobs: make(map[string]int64, len(queues)), Outcomes: outcomes.Val(), Dead: dead.Val()}
	for i, q := range queues {
		l.Jobs[q] = jobs[i].Val()
	}
	return l, nil
}
