-- move.lua takes messages: it moves up to ARGV[1] messages from the right
-- (oldest) end of KEYS[1] to the left of KEYS[2], as LMOVE KEYS[1] KEYS[2]
-- RIGHT LEFT repeated would, and returns them oldest first. It stops before
-- the first message that would take their sizes past ARGV[2] bytes (the
-- first message moves whatever its size), and reads the source 100
-- messages at a time, so that a crowd of large messages costs Redis no more
-- than that past the bound. With a third key (a heartbeat sorted set), it
-- first records the taker ARGV[4] as seen at ARGV[3]. With ARGV[5], the
-- prefix of the revocation keys of jobs (P:revoked:), it also reads, for each
-- message moved, the attempt_uid the message names (the first member of
-- that name with a plain string value, found as text; false if none) and
-- the value of the key ARGV[5]..uid (false if unset or no uid), and returns
-- them after the messages: messages..., uid, value, uid, value... The
-- taker, which decodes the messages strictly, uses a value only where the
-- uid is the one it decoded. The keys read share the prefix's hash tag.
--
-- KEYS: source list, destination list[, heartbeat sorted set]
-- ARGV: max messages, max bytes[, now (Unix ms), member[, revocation key prefix]]
local n, bytes = tonumber(ARGV[1]), tonumber(ARGV[2])
if KEYS[3] then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4]) end
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
if ARGV[5] then
  local m = #out
  for i = 1, m do
    local uid = string.match(out[i], '"attempt_uid"%s*:%s*"([^"\\]*)"') or false
    out[m + 2 * i - 1] = uid
    out[m + 2 * i] = uid and redis.call('GET', ARGV[5] .. uid) or false
  end
end
return out
