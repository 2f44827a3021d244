-- ack.lua acknowledges a consumer's processing list but for the messages it
-- keeps, provided the list holds as many messages as were delivered (it
-- then holds exactly them): it empties KEYS[1] and pushes the kept ones
-- (oldest first) back on its left, so the oldest ends up rightmost, as it
-- was taken. It renews the lease and returns how many it dropped, or -1 if
-- the length differs (the list was taken back, or holds messages never
-- delivered), leaving the list alone.
--
-- KEYS: processing list, heartbeat sorted set
-- ARGV: number delivered, now (Unix ms), member, the messages kept...
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return -1 end
redis.call('DEL', KEYS[1])
for i = 4, #ARGV do
  redis.call('LPUSH', KEYS[1], ARGV[i])
end
return tonumber(ARGV[1]) - (#ARGV - 3)
