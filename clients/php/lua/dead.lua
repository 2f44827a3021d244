-- dead.lua moves messages from a taker's list to the dead-letter list,
-- each only if the list still holds it (a taker taken for dead has lost its
-- list to another one, which deals with its messages), then, if ARGV[1] >
-- 0, trims the dead-letter list to its ARGV[1] newest entries. It returns
-- how many messages it moved and how many entries it dropped.
--
-- KEYS: taken list, dead-letter list
-- ARGV: max entries (0: no bound), message, its dead-letter entry, message, entry...
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
