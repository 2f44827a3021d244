package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// moveScript registers the caller as alive and moves up to ARGV[1] messages
// from the right (oldest) end of KEYS[1] to the left of KEYS[2], returning
// them oldest first: what LMOVE RIGHT LEFT one message at a time does, in
// three commands, while the messages add up to at most ARGV[4] bytes (see
// moveLua).
//
//	KEYS: source list, destination list, heartbeat sorted set
//	ARGV: max, now (Unix ms), member, max bytes
var moveScript = redis.NewScript(`
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
local n, bytes = tonumber(ARGV[1]), tonumber(ARGV[4])
` + moveLua + `
`)

// moveLua moves up to n messages from the right (oldest) end of KEYS[1] to
// the left of KEYS[2], as LMOVE RIGHT LEFT repeated would, and returns them
// oldest first; it stops before the first message that would take their
// sizes past bytes (the first message moves whatever its size). It reads
// the source 100 messages at a time, so that a crowd of large messages
// costs Redis no more than that past the bound.
const moveLua = `
local out, size, full = {}, 0, false
while #out < n and not full do
  local want = math.min(n - #out, 100)
  local v = redis.call('LRANGE', KEYS[1], -(#out + want), -(#out + 1))
  for i = #v, 1, -1 do
    size = size + #v[i]
    if #out > 0 and size > bytes then full = true break end
    out[#out + 1] = v[i]
  end
  if #v < want then break end
end
if #out == 0 then return {} end
redis.call('LTRIM', KEYS[1], 0, -#out - 1)
for i = 1, #out, 1000 do
  redis.call('LPUSH', KEYS[2], unpack(out, i, math.min(i + 999, #out)))
end
return out`

// requeueScript gives back everything a consumer (or worker) took and did
// not finish: it moves the whole of KEYS[1] to the right end of KEYS[2],
// keeping the order (the oldest message ends up rightmost, so it is taken
// first again), and removes the member from the heartbeat set. With a
// cutoff (ARGV[2] != ""), it does nothing and returns -1 if the member was
// seen after the cutoff: it came back to life since it was found dead.
//
//	KEYS: taken list, source list, heartbeat sorted set
//	ARGV: member, cutoff (Unix ms) or ""
var requeueScript = redis.NewScript(`
if ARGV[2] ~= '' then
  local seen = redis.call('ZSCORE', KEYS[3], ARGV[1])
  if seen and tonumber(seen) > tonumber(ARGV[2]) then return -1 end
end
local n = 0
while true do
  local v = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not v then break end
  n = n + 1
end
redis.call('ZREM', KEYS[3], ARGV[1])
return n
`)

// ackScript acknowledges a consumer's processing list but for the messages
// it keeps, provided the list holds as many messages as were delivered (it
// then holds exactly them): it empties KEYS[1] and pushes the kept ones
// (oldest first) back on its left, so the oldest ends up rightmost, as it
// was taken. It renews the lease and returns how many it dropped, or -1 if
// the length differs (the list was taken back, or holds messages never
// delivered), leaving the list alone.
//
//	KEYS: processing list, heartbeat sorted set
//	ARGV: number delivered, now (Unix ms), member, the messages kept...
var ackScript = redis.NewScript(`
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return -1 end
redis.call('DEL', KEYS[1])
for i = 4, #ARGV do
  redis.call('LPUSH', KEYS[1], ARGV[i])
end
return tonumber(ARGV[1]) - (#ARGV - 3)
`)

// settleScript sorts out a processing list whose content is not known
// exactly: of its messages it drops those listed to drop, keeps those
// listed to keep (as many times as listed, in their order) and gives back
// every other one to the right end of the source list, oldest rightmost.
// It renews the lease and returns {dropped, kept, given back}.
//
//	KEYS: processing list, source list, heartbeat sorted set
//	ARGV: now (Unix ms), member, n, n messages to keep, messages to drop...
var settleScript = redis.NewScript(`
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2])
local nkeep = tonumber(ARGV[3])
local keep, drop = {}, {}
for i = 4, 3 + nkeep do keep[ARGV[i]] = (keep[ARGV[i]] or 0) + 1 end
for i = 4 + nkeep, #ARGV do drop[ARGV[i]] = (drop[ARGV[i]] or 0) + 1 end
local items = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
local fate = {}
local dropped, kept, back = 0, 0, 0
for i = #items, 1, -1 do
  local v = items[i]
  if (drop[v] or 0) > 0 then
    drop[v] = drop[v] - 1
    dropped = dropped + 1
    fate[i] = 'drop'
  elseif (keep[v] or 0) > 0 then
    keep[v] = keep[v] - 1
    kept = kept + 1
    fate[i] = 'keep'
  else
    back = back + 1
    fate[i] = 'back'
  end
end
for i = #items, 1, -1 do
  if fate[i] == 'keep' then redis.call('LPUSH', KEYS[1], items[i]) end
end
for i = 1, #items do
  if fate[i] == 'back' then redis.call('RPUSH', KEYS[2], items[i]) end
end
return {dropped, kept, back}
`)

// deadScript moves messages from a taker's list to the dead-letter list,
// each only if the list still holds it (a taker taken for dead has lost
// its list to another one, which deals with its messages), then, if
// ARGV[1] > 0, trims the dead-letter list to its ARGV[1] newest entries.
// It returns how many messages it moved and how many entries it dropped.
//
//	KEYS: taken list, dead-letter list
//	ARGV: max entries (0: no bound), message, its dead-letter entry, message, entry...
var deadScript = redis.NewScript(`
local n = 0
for i = 2, #ARGV, 2 do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) > 0 then
    redis.call('LPUSH', KEYS[2], ARGV[i + 1])
    n = n + 1
  end
end
local dropped = 0
local max = tonumber(ARGV[1])
if max > 0 and n > 0 then
  local len = redis.call('LLEN', KEYS[2])
  if len > max then
    redis.call('LTRIM', KEYS[2], 0, max - 1)
    dropped = len - max
  end
end
return {n, dropped}
`)

// trimDeadScript trims the dead-letter list to its ARGV[1] newest entries
// and returns how many it dropped.
//
//	KEYS: dead-letter list
//	ARGV: max entries (> 0)
var trimDeadScript = redis.NewScript(`
local max = tonumber(ARGV[1])
local len = redis.call('LLEN', KEYS[1])
if len <= max then return 0 end
redis.call('LTRIM', KEYS[1], 0, max - 1)
return len - max
`)

// giveBackScript gives back messages a live taker holds but does not work
// on: each one its list still holds moves to the right (next taken) end of
// the source list. It returns how many it moved.
//
//	KEYS: taken list, source list
//	ARGV: the messages, newest first
var giveBackScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) > 0 then
    redis.call('RPUSH', KEYS[2], ARGV[i])
    n = n + 1
  end
end
return n
`)

// setAside runs deadScript on pairs of messages and entries, keeping at
// most max entries (0: no bound); it returns how many messages it moved and
// how many old entries it dropped.
func setAside(ctx context.Context, c redis.Scripter, taken, dead string, max int64, pairs []any) (moved, dropped int, err error) {
	args := append(make([]any, 0, len(pairs)+1), max)
	v, err := deadScript.Run(ctx, c, []string{taken, dead}, append(args, pairs...)...).Int64Slice()
	if err != nil || len(v) != 2 {
		return 0, 0, err
	}
	return int(v[0]), int(v[1]), nil
}

// takeScript moves up to ARGV[1] messages from the right (oldest) end of
// KEYS[1] to the left of KEYS[2], while they add up to at most ARGV[2]
// bytes (see moveLua), and returns them, oldest first.
//
//	KEYS: source list, taken list
//	ARGV: max, max bytes
var takeScript = redis.NewScript(`
local n, bytes = tonumber(ARGV[1]), tonumber(ARGV[2])
` + moveLua)
