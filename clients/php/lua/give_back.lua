-- give_back.lua gives back messages a live taker holds but does not work
-- on: each one its list still holds moves to the right (next taken) end of
-- the source list. It returns how many it moved.
--
-- KEYS: taken list, source list
-- ARGV: the messages, newest first
local n = 0
for i = 1, #ARGV do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) > 0 then
    redis.call('RPUSH', KEYS[2], ARGV[i])
    n = n + 1
  end
end
return n
