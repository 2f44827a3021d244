-- trim_dead.lua trims the dead-letter list to its ARGV[1] newest entries
-- and returns how many it dropped.
--
-- KEYS: dead-letter list
-- ARGV: max entries (> 0)
local max = tonumber(ARGV[1])
local len = redis.call('LLEN', KEYS[1])
if len <= max then return 0 end
redis.call('LTRIM', KEYS[1], 0, max - 1)
return len - max
