-- settle.lua sorts out a processing list whose content is not known
-- exactly: of its messages it drops those listed to drop, keeps those
-- listed to keep (as many times as listed, in their order) and gives back
-- every other one to the right end of the source list, oldest rightmost.
-- It renews the lease and returns {dropped, kept, given back}.
--
-- KEYS: processing list, source list, heartbeat sorted set
-- ARGV: now (Unix ms), member, n, n messages to keep, messages to drop...
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
