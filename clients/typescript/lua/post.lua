-- post.lua acknowledges jobs a worker finished: it pushes their outcomes on
-- the left of KEYS[1], as one LPUSH of them in the order given would, and
-- removes each job from the taker's list KEYS[2], looking from its oldest
-- end (LREM KEYS[2] -1 job), in one step, as MULTI, LPUSH, LREM... and EXEC
-- would. It returns how many jobs it removed.
--
-- KEYS: outcomes list, taken list
-- ARGV: number of outcomes k, the k outcomes, then the jobs exactly as taken...
local k = tonumber(ARGV[1])
for i = 2, k + 1, 1000 do
  redis.call('LPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, k + 1)))
end
local n = 0
for i = k + 2, #ARGV do
  n = n + redis.call('LREM', KEYS[2], -1, ARGV[i])
end
return n
