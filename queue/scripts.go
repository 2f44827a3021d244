package queue

import "github.com/redis/go-redis/v9"

// moveScript registers the caller as alive and moves up to ARGV[1] messages
// from the right (oldest) end of KEYS[1] to the left of KEYS[2], returning
// them oldest first.
//
//	KEYS: source list, destination list, heartbeat sorted set
//	ARGV: max, now (Unix ms), member
var moveScript = redis.NewScript(`
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local v = redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT')
  if not v then break end
  out[i] = v
end
return out
`)

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
// it keeps: it empties KEYS[1] and pushes ARGV (oldest first) back on its
// left, so the oldest kept message ends up rightmost, as it was taken.
//
//	KEYS: processing list
//	ARGV: the messages kept, oldest first
var ackScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
for i = 1, #ARGV do
  redis.call('LPUSH', KEYS[1], ARGV[i])
end
return #ARGV
`)
