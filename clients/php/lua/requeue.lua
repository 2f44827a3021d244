-- requeue.lua gives back everything a taker (a worker or a consumer) took
-- and did not finish: it moves the whole of KEYS[1] to the right end of
-- KEYS[2], keeping the order (the oldest message ends up rightmost, so it
-- is taken first again), removes the member from the heartbeat set and
-- returns how many messages it moved. With a cutoff (ARGV[2] ~= ''), it
-- does nothing and returns -1 if the member was seen after the cutoff: it
-- came back to life since it was found dead.
--
-- KEYS: taken list, source list, heartbeat sorted set
-- ARGV: member, cutoff (Unix ms) or ''
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
