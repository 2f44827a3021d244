package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// deadFixture fills the dead-letter list of b the way serve and workers do:
// an outcome refused by the store, malformed outcomes, a job refused by a
// worker, a message too large, and an entry that is no dead letter at all.
// It returns the Redis and the list newest first.
func deadFixture(t *testing.T, b backend) (*Redis, []refresh.DeadLetter) {
	t.Helper()
	ctx := context.Background()
	clock := refresh.NewVirtualClock(t0)
	r := b.newRedis(t, "c1", clock)
	valid := outcomeJSON(t, refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: "success"})
	b.lpush(t, b.keys.outcomesKey(), valid)
	got, err := r.Receive(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.NoError(t, r.DeadLetter(ctx, got[0], "the store refused it: invalid byte sequence"))

	clock.Advance(time.Second)
	b.lpush(t, b.keys.outcomesKey(), `{"model_id":"m2","outcome":"success"}`, `[1]`)
	got, err = r.Receive(ctx, 10, 0)
	require.NoError(t, err)
	require.Empty(t, got)

	clock.Advance(time.Second)
	job := `{"model_id":"m3","attempt_uid":"u3","attempt_no":"two","queue":"tables"}`
	b.lpush(t, b.keys.deadKey(),
		deadEntry("job: attempt_no: must be an integer, got \"two\"", job, clock.Now(), DefaultLimits()),
		deadEntry("job: attempt_uid: missing", `{"model_id":"m4"}`, clock.Now(), DefaultLimits()),
		deadEntry("too large: must be at most 1048576 bytes, got 2000000", strings.Repeat("x", 2_000_000), clock.Now(), DefaultLimits()),
		`not an entry`)

	letters, next, err := r.DeadLetters(ctx, "", 100)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, letters, 7)
	return r, letters
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		_, letters := deadFixture(t, b)
		type row struct{ reason, list, refusal string }
		var rows []row
		for _, d := range letters {
			require.Len(t, d.ID, 16)
			rows = append(rows, row{d.Reason, d.List, d.Refusal})
		}
		require.Equal(t, []row{ // newest first
			{"not a dead-letter entry (want an object with reason, message and at)", "", "it is not a dead-letter entry"},
			{"too large: must be at most 1048576 bytes, got 2000000", "", "its message was cut when it was set aside"},
			{"job: attempt_uid: missing", "", "its message names no queue to put it back on"},
			{`job: attempt_no: must be an integer, got "two"`, "jobs:tables", ""},
			{"must be a JSON object, got an array", "outcomes", ""},
			{"attempt_uid: missing", "outcomes", ""},
			{"the store refused it: invalid byte sequence", "outcomes", ""},
		}, rows)
		require.Equal(t, "not an entry", letters[0].Message)
		require.True(t, letters[0].At.IsZero())
		require.Equal(t, t0.Add(2*time.Second), letters[1].At)
		require.Len(t, letters[1].Message, DefaultLimits().MaxMessageBytes)
		require.Equal(t, t0, letters[6].At)
		require.JSONEq(t, `{"model_id":"m1","attempt_uid":"u1","outcome":"success"}`, letters[6].Message)
	})
}

func TestDeadLettersPages(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r, all := deadFixture(t, b)
		var ids []string
		after := ""
		for page := 0; ; page++ {
			letters, next, err := r.DeadLetters(ctx, after, 3)
			require.NoError(t, err)
			require.LessOrEqual(t, len(letters), 3)
			for _, d := range letters {
				ids = append(ids, d.ID)
			}
			if page == 0 {
				// A new dead letter does not move the pages that follow.
				b.lpush(t, b.keys.deadKey(), deadEntry("outcome: missing", `{}`, t0.Add(time.Hour), DefaultLimits()))
			}
			if next == "" {
				break
			}
			after = next
		}
		var want []string
		for _, d := range all {
			want = append(want, d.ID)
		}
		require.Equal(t, want, ids)

		// The cursor of the last page, once entries were dropped, still
		// ends the listing.
		letters, next, err := r.DeadLetters(ctx, "", 2)
		require.NoError(t, err)
		require.Len(t, letters, 2)
		require.Equal(t, "6", next)
		_, err = r.DropAllDead(ctx)
		require.NoError(t, err)
		letters, next, err = r.DeadLetters(ctx, "6", 2)
		require.NoError(t, err)
		require.Empty(t, letters)
		require.Empty(t, next)

		for _, bad := range []string{"x", "0", "-1", "1.5"} {
			_, _, err := r.DeadLetters(ctx, bad, 2)
			require.EqualError(t, err, "after: must be the next of a previous page", bad)
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
		}
	})
}

// TestDeadLettersBytesBound: a page holds entries, newest first, while
// they add up to 2 messages at the size limit, and always one; small
// ones, up to the limit asked for, across the script's reads of 100.
func TestDeadLettersBytesBound(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newSmallRedis(t, "c1")
		entry := func(i, size int) string { return fmt.Sprintf("%05d", i) + strings.Repeat("x", size-5) }
		pages := func(r *Redis, limit int) [][]int {
			t.Helper()
			var out [][]int
			for after := ""; ; {
				letters, next, err := r.DeadLetters(ctx, after, limit)
				require.NoError(t, err)
				page := []int{}
				for _, d := range letters {
					i, err := strconv.Atoi(d.Message[:5])
					require.NoError(t, err)
					page = append(page, i)
				}
				out = append(out, page)
				if next == "" {
					return out
				}
				after = next
			}
		}
		var entries []string // pushed oldest first: listed newest first
		for i := range 250 {
			entries = append(entries, entry(249-i, 100))
		}
		b.lpush(t, b.keys.deadKey(), entries...)
		var all []int
		for i := range 250 {
			all = append(all, i)
		}
		require.Equal(t, [][]int{all}, pages(b.newRedis(t, "c2", refresh.NewVirtualClock(t0)), 1000), "across reads of 100")
		_, err := r.DropAllDead(ctx)
		require.NoError(t, err)

		entries = entries[:0]
		for i := range 5 {
			entries = append(entries, entry(5-i, 1000))
		}
		entries = append(entries, entry(0, 3000))
		b.lpush(t, b.keys.deadKey(), entries...)
		require.Equal(t, [][]int{{0}, {1, 2}, {3, 4}, {5}}, pages(r, 100),
			"the first whatever its size, then 2 KiB: 2 entries of 1,000 bytes")
		require.Equal(t, [][]int{{0}, {1}, {2}, {3}, {4}, {5}}, pages(r, 1), "the limit still holds")
	})
}

// TestDeadLetterKeepsBytes: a message of up to an eighth of the size
// limit (and at least MaxMessageBytes) is kept whole and can be requeued;
// a longer one keeps its beginning only, and cannot.
func TestDeadLetterKeepsBytes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "c1", refresh.NewVirtualClock(t0))
		malformed := func(size int) string { // no attempt_uid
			return `{"model_id":"m1","outcome":"success","x":"` + strings.Repeat("y", size-44) + `"}`
		}
		kept, cut := malformed(128<<10), malformed(128<<10+1)
		require.Len(t, kept, 128<<10)
		b.lpush(t, b.keys.outcomesKey(), kept, cut)
		got, err := r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Empty(t, got)

		letters, _, err := r.DeadLetters(ctx, "", 10)
		require.NoError(t, err)
		require.Len(t, letters, 2)
		require.Equal(t, "attempt_uid: missing", letters[0].Reason)
		require.Equal(t, cut[:DefaultMaxMessageBytes-len(TruncatedMarker)]+TruncatedMarker, letters[0].Message)
		require.Equal(t, "its message was cut when it was set aside", letters[0].Refusal)
		require.Empty(t, letters[0].List)
		require.Equal(t, kept, letters[1].Message)
		require.Equal(t, "outcomes", letters[1].List)

		res, err := r.RequeueDead(ctx, []string{letters[0].ID, letters[1].ID})
		require.NoError(t, err)
		require.Equal(t, 1, res.Done)
		require.Len(t, res.Refused, 1)
		require.Equal(t, []string{kept}, b.lrange(t, b.keys.outcomesKey()))
	})
}

func TestRequeueDead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r, letters := deadFixture(t, b)
		// Requeue the two requeueable outcomes, the job, one that cannot be
		// requeued, and one id that is not there.
		res, err := r.RequeueDead(ctx, []string{letters[6].ID, letters[3].ID, letters[2].ID, "0123456789abcdef", letters[4].ID, letters[6].ID})
		require.NoError(t, err)
		require.Equal(t, 3, res.Done)
		require.Equal(t, []string{"0123456789abcdef"}, res.Missing)
		require.Equal(t, []refresh.DeadRefusal{{ID: letters[2].ID, Reason: "its message names no queue to put it back on"}}, res.Refused)

		// Outcomes go back to the pushing end, oldest first, so the store's
		// refusal is received again before the array.
		require.Equal(t, []string{`[1]`, letters[6].Message}, b.lrange(t, b.keys.outcomesKey()))
		require.Equal(t, []string{letters[3].Message}, b.lrange(t, b.keys.jobsKey("tables")))
		left, _, err := r.DeadLetters(ctx, "", 100)
		require.NoError(t, err)
		require.Equal(t, []refresh.DeadLetter{letters[0], letters[1], letters[2], letters[5]}, left)

		// What is received again is decoded again: the valid outcome
		// arrives, the array is dead-lettered once more.
		got, err := r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "u1", got[0].AttemptUID)
		left, _, err = r.DeadLetters(ctx, "", 100)
		require.NoError(t, err)
		require.Len(t, left, 5)
		require.Equal(t, "must be a JSON object, got an array", left[0].Reason)

		// A second requeue of the same id finds nothing.
		res, err = r.RequeueDead(ctx, []string{letters[6].ID})
		require.NoError(t, err)
		require.Equal(t, refresh.DeadResult{Missing: []string{letters[6].ID}}, res)
	})
}

func TestRequeueAllDead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r, letters := deadFixture(t, b)
		// More than a chunk, so that the refused entries kept at the oldest
		// end are stepped over.
		var entries []string
		for i := range deadChunk + 10 {
			entries = append(entries, deadEntry("attempt_uid: missing", fmt.Sprintf(`{"model_id":"n%d"}`, i), t0, DefaultLimits()))
		}
		b.lpush(t, b.keys.deadKey(), entries...)
		res, err := r.RequeueAllDead(ctx)
		require.NoError(t, err)
		require.Equal(t, deadChunk+10+4, res.Done)
		require.Nil(t, res.Missing)
		var refused []string
		for _, f := range res.Refused {
			refused = append(refused, f.ID)
		}
		require.Equal(t, []string{letters[2].ID, letters[1].ID, letters[0].ID}, refused) // oldest first
		left, _, err := r.DeadLetters(ctx, "", 100)
		require.NoError(t, err)
		require.Equal(t, []refresh.DeadLetter{letters[0], letters[1], letters[2]}, left)
		outcomes := b.lrange(t, b.keys.outcomesKey())
		require.Len(t, outcomes, deadChunk+10+3)
		require.Equal(t, letters[6].Message, outcomes[len(outcomes)-1], "the oldest is taken first")
		require.Equal(t, fmt.Sprintf(`{"model_id":"n%d"}`, deadChunk+9), outcomes[0])
		jobs := b.lrange(t, b.keys.jobsKey("tables"))
		require.Equal(t, []string{letters[3].Message}, jobs)

		// What is refused again once received is on the list again, for
		// the next requeue.
		got, err := r.Receive(ctx, 1000, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)
		res, err = r.RequeueAllDead(ctx)
		require.NoError(t, err)
		require.Equal(t, deadChunk+10+2, res.Done)
		require.Len(t, res.Refused, 3)
	})
}

func TestDropDead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r, letters := deadFixture(t, b)
		res, err := r.DropDead(ctx, []string{letters[0].ID, letters[5].ID, "fedcba9876543210"})
		require.NoError(t, err)
		require.Equal(t, refresh.DeadResult{Done: 2, Missing: []string{"fedcba9876543210"}}, res)
		left, _, err := r.DeadLetters(ctx, "", 100)
		require.NoError(t, err)
		require.Equal(t, []refresh.DeadLetter{letters[1], letters[2], letters[3], letters[4], letters[6]}, left)
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()), "a drop puts nothing back")

		res, err = r.DropAllDead(ctx)
		require.NoError(t, err)
		require.Equal(t, refresh.DeadResult{Done: 5}, res)
		left, next, err := r.DeadLetters(ctx, "", 100)
		require.NoError(t, err)
		require.Empty(t, left)
		require.Empty(t, next)
	})
}
