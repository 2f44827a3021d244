package queue

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
)

// deadChunk is how many dead letters one command reads or one script
// moves: at most about 13 MB of the entries serve and the Go SDK write
// (Limits.keepBytes).
const deadChunk = 100

// jobReasonPrefix starts the reason of a dead-lettered job (WIRE.md).
const jobReasonPrefix = "job: "

// DeadLetters returns up to limit entries of the dead-letter list, newest
// first, and the cursor of the next page ("" on the last page). after is
// "" for the first page, else the cursor a previous page returned: a page
// never skips an entry that was on the list when the first page was read
// and is still on it, and new entries, which go to the newest end, do not
// shift the pages that follow. An entry requeued or dropped meanwhile
// shifts the rest by one, so an entry may then show on two pages.
func (r *Redis) DeadLetters(ctx context.Context, after string, limit int) ([]refresh.DeadLetter, string, error) {
	limit = max(limit, 1)
	cursor := int64(-1) // none: the newest entries
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 1 {
			return nil, "", &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "after", Rule: "must be the next of a previous page"}}}
		}
		cursor = n
	}
	key := r.keys.deadKey()
	// Positions count from the oldest entry (0), at the right end of the
	// list, so entries pushed on the left do not move them. A page shows
	// the positions below its cursor, newest first.
	n, err := r.client.LLen(ctx, key).Result()
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	if cursor < 0 || cursor > n {
		cursor = n
	}
	// The entries at positions cursor-1 down to cursor-limit at most,
	// newest first. Entries pushed between LLEN and the script are on the
	// left, out of this range.
	raws, err := deadPageScript.Run(ctx, r.client, []string{key}, cursor, limit, r.opt.Limits.pageBytes()).StringSlice()
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	letters := make([]refresh.DeadLetter, 0, len(raws))
	for _, raw := range raws {
		letters = append(letters, r.parseDead(raw))
	}
	next := ""
	if low := cursor - int64(len(raws)); low > 0 {
		next = strconv.FormatInt(low, 10)
	}
	return letters, next, nil
}

// deadPageScript returns the entries of the dead-letter list at positions
// (from the oldest, 0) ARGV[1]-1 down to ARGV[1]-ARGV[2] at most, newest
// first, stopping before the entry that would take their sizes past
// ARGV[3] bytes (the first entry whatever its size). It reads the list 100
// entries at a time, so that Redis copies no more than that past the
// bound.
//
//	KEYS: the dead-letter list
//	ARGV: cursor, limit, max bytes
var deadPageScript = redis.NewScript(`
local cursor, limit, bytes = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out, size = {}, 0
while #out < limit and #out < cursor do
  local hi = cursor - #out
  local lo = math.max(hi - math.min(limit - #out, 100), 0)
  local v = redis.call('LRANGE', KEYS[1], -hi, -(lo + 1))
  if #v == 0 then break end
  for i = 1, #v do
    size = size + #v[i]
    if #out > 0 and size > bytes then return out end
    out[#out + 1] = v[i]
  end
end
return out
`)

// RequeueDead puts the dead letters with the given ids back on the lists
// they came from (see DeadLetter.List), oldest first: the message goes to
// the pushing end, as a new message would, and the entry leaves the
// dead-letter list, in one step each. Ids the list does not hold are
// reported missing; entries that cannot be requeued stay and are reported
// refused.
func (r *Redis) RequeueDead(ctx context.Context, ids []string) (refresh.DeadResult, error) {
	return r.deadByID(ctx, ids, true)
}

// DropDead removes the dead letters with the given ids; ids the list does
// not hold are reported missing.
func (r *Redis) DropDead(ctx context.Context, ids []string) (refresh.DeadResult, error) {
	return r.deadByID(ctx, ids, false)
}

// RequeueAllDead requeues, oldest first, as many entries as the list held
// when it was called (so a message refused again while it runs is not
// requeued twice); entries that cannot be requeued stay and are reported
// refused.
func (r *Redis) RequeueAllDead(ctx context.Context) (refresh.DeadResult, error) {
	var res refresh.DeadResult
	key := r.keys.deadKey()
	left, err := r.client.LLen(ctx, key).Result()
	if err != nil {
		return res, fmt.Errorf("requeue dead letters: %w", err)
	}
	kept := int64(0) // refused entries, which stay at the oldest end
	for left > 0 {
		size := min(left, deadChunk)
		raws, err := r.client.LRange(ctx, key, -(kept + size), -(kept + 1)).Result()
		if err != nil {
			return res, fmt.Errorf("requeue dead letters: %w", err)
		}
		if len(raws) == 0 {
			break
		}
		left -= int64(len(raws))
		var ops []deadOp
		for _, raw := range slices.Backward(raws) { // oldest first
			d := r.parseDead(raw)
			if d.List == "" {
				res.Refused = append(res.Refused, refresh.DeadRefusal{ID: d.ID, Reason: d.Refusal})
				kept++
				continue
			}
			ops = append(ops, deadOp{entry: raw, fromTail: true, target: r.listKey(d.List), message: d.Message})
		}
		done, err := r.runDead(ctx, ops)
		if err != nil {
			return res, fmt.Errorf("requeue dead letters: %w", err)
		}
		for _, ok := range done {
			if ok {
				res.Done++
			}
		}
	}
	return res, nil
}

// DropAllDead empties the dead-letter list and reports how many entries it
// held.
func (r *Redis) DropAllDead(ctx context.Context) (refresh.DeadResult, error) {
	n, err := dropAllScript.Run(ctx, r.client, []string{r.keys.deadKey()}).Int()
	if err != nil {
		return refresh.DeadResult{}, fmt.Errorf("drop dead letters: %w", err)
	}
	return refresh.DeadResult{Done: n}, nil
}

// deadByID requeues (or drops) the entries with ids.
func (r *Redis) deadByID(ctx context.Context, ids []string, requeue bool) (refresh.DeadResult, error) {
	what := "drop"
	if requeue {
		what = "requeue"
	}
	var res refresh.DeadResult
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	// Find the entries, remembering where each one was: each is looked for
	// from the nearer end, and they are moved oldest first, so requeued
	// messages keep their order.
	type found struct {
		raw   string
		index int64
	}
	at := map[string]found{}
	key := r.keys.deadKey()
	n, err := r.client.LLen(ctx, key).Result()
	if err != nil {
		return res, fmt.Errorf("%s dead letters: %w", what, err)
	}
	for start := int64(0); start < n && len(at) < len(want); start += deadChunk {
		raws, err := r.client.LRange(ctx, key, start, start+deadChunk-1).Result()
		if err != nil {
			return res, fmt.Errorf("%s dead letters: %w", what, err)
		}
		for i, raw := range raws {
			id := deadID(raw)
			if _, seen := at[id]; want[id] && !seen {
				at[id] = found{raw: raw, index: start + int64(i)}
			}
		}
		if len(raws) < deadChunk {
			break
		}
	}
	order := make([]string, 0, len(at))
	for _, id := range ids {
		if _, ok := at[id]; !ok {
			if !slices.Contains(res.Missing, id) {
				res.Missing = append(res.Missing, id)
			}
		} else if !slices.Contains(order, id) {
			order = append(order, id)
		}
	}
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(at[b].index, at[a].index) })
	var ops []deadOp
	var opIDs []string
	for _, id := range order {
		f := at[id]
		op := deadOp{entry: f.raw, fromTail: f.index >= n/2}
		if requeue {
			d := r.parseDead(f.raw)
			if d.List == "" {
				res.Refused = append(res.Refused, refresh.DeadRefusal{ID: id, Reason: d.Refusal})
				continue
			}
			op.target, op.message = r.listKey(d.List), d.Message
		}
		ops = append(ops, op)
		opIDs = append(opIDs, id)
	}
	done, err := r.runDead(ctx, ops)
	if err != nil {
		return res, fmt.Errorf("%s dead letters: %w", what, err)
	}
	for i, ok := range done {
		if ok {
			res.Done++
		} else {
			res.Missing = append(res.Missing, opIDs[i])
		}
	}
	return res, nil
}

// deadOp removes one entry from the dead-letter list and, if target is
// set, pushes message on target.
type deadOp struct {
	entry    string
	fromTail bool // look for the entry from the oldest end
	target   string
	message  string
}

// runDead runs deadOpScript on ops, deadChunk at a time, and reports for
// each whether its entry was still there.
func (r *Redis) runDead(ctx context.Context, ops []deadOp) ([]bool, error) {
	done := make([]bool, 0, len(ops))
	for chunk := range slices.Chunk(ops, deadChunk) {
		keys := []string{r.keys.deadKey()}
		index := map[string]int{}
		args := make([]any, 0, 4*len(chunk))
		for _, op := range chunk {
			target := 0
			if op.target != "" {
				if target = index[op.target]; target == 0 {
					keys = append(keys, op.target)
					target = len(keys)
					index[op.target] = target
				}
			}
			count := 1
			if op.fromTail {
				count = -1
			}
			args = append(args, op.entry, count, target, op.message)
		}
		flags, err := deadOpScript.Run(ctx, r.client, keys, args...).Int64Slice()
		if err != nil {
			return done, err
		}
		for _, f := range flags {
			done = append(done, f > 0)
		}
	}
	return done, nil
}

// deadOpScript removes entries from the dead-letter list and pushes the
// message of each one it removed on its target list, one entry at a time,
// and returns for each entry whether it was there.
//
//	KEYS: the dead-letter list, then the target lists
//	ARGV: entry, LREM count (1 from the newest end, -1 from the oldest),
//	      target (index in KEYS; 0 drops the entry), message, ...
var deadOpScript = redis.NewScript(`
local done = {}
for i = 1, #ARGV, 4 do
  local n = redis.call('LREM', KEYS[1], ARGV[i + 1], ARGV[i])
  local target = tonumber(ARGV[i + 2])
  if n > 0 and target > 0 then
    redis.call('LPUSH', KEYS[target], ARGV[i + 3])
  end
  done[#done + 1] = n
end
return done
`)

// dropAllScript empties the dead-letter list and returns how many entries
// it held.
//
//	KEYS: the dead-letter list
var dropAllScript = redis.NewScript(`
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1])
return n
`)

// deadID names a dead-letter entry: the first 16 hex digits of the SHA-256
// of the entry as stored.
func deadID(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:8])
}

// parseDead reads a dead-letter entry and tells where a requeue puts it
// back: a reason starting "job: " came from the jobs list of the queue its
// message names, any other from the outcomes list.
func (r *Redis) parseDead(raw string) refresh.DeadLetter {
	d := refresh.DeadLetter{ID: deadID(raw)}
	var e struct {
		Reason  *string   `json:"reason"`
		Message *string   `json:"message"`
		At      time.Time `json:"at"`
		Cut     bool      `json:"cut"`
	}
	if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Reason == nil || e.Message == nil {
		d.Reason = "not a dead-letter entry (want an object with reason, message and at)"
		d.Message = raw
		d.Refusal = "it is not a dead-letter entry"
		return d
	}
	d.Reason, d.Message, d.At = *e.Reason, *e.Message, e.At
	rule, job := strings.CutPrefix(d.Reason, jobReasonPrefix)
	switch {
	case e.Cut || strings.HasPrefix(rule, "too large:"): // entries of older versions have no cut
		d.Refusal = "its message was cut when it was set aside"
	case !job:
		d.List = "outcomes"
	default:
		var m struct {
			Queue *string `json:"queue"`
		}
		switch err := json.Unmarshal([]byte(d.Message), &m); {
		case err != nil:
			d.Refusal = "its message is no JSON object, so it names no queue to put it back on"
		case m.Queue == nil:
			d.Refusal = "its message names no queue to put it back on"
		case *m.Queue != "" && ValidateName(*m.Queue) != nil:
			d.Refusal = "the queue its message names, " + shortText(*m.Queue) + ", is no valid queue name"
		default:
			d.List = "jobs:" + queueName(*m.Queue)
		}
	}
	return d
}

// listKey is the key of a list as DeadLetter.List names it.
func (r *Redis) listKey(list string) string {
	if q, ok := strings.CutPrefix(list, "jobs:"); ok {
		return r.keys.jobsKey(q)
	}
	return r.keys.outcomesKey()
}
