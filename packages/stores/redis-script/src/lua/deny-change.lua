-- One change to a deny list (core's DenyListSource.change), for the config sources of both Redis-protocol stores,
-- in one script so that no other change falls between reading the version and writing the log.
-- KEYS[1]: the entries (HASH, match -> entry text); KEYS[2]: where the list is (HASH: epoch, version); KEYS[3]: the
-- log (LIST of change texts, newest first); KEYS[4]: when entries end (ZSET, match scored by its `until`, for the
-- entries that have one).
-- ARGV[1]: the epoch to use when no list is stored; ARGV[2]: the channel to PUBLISH the change on ('' for none:
-- Upstash has no push); ARGV[3]: how many changes the log keeps; ARGV[4]: the change's text without its version
-- (core's changeText, a JSON object); ARGV[5]: '1' to clear the entries first; ARGV[6]: epoch ms before which
-- (inclusive) ended entries are dropped after the change, as a change of their own ('' for none); ARGV[7]: how many
-- matches to remove, then those matches, then for each entry to add its match, its entry text and its `until` ('' for none).
-- Returns the epoch and the version the change made and how many of the matches to remove were held (after the
-- clear), each after REPLY_MARK (deny-script.ts reads them).
local REPLY_MARK = '~'
-- unpack() passes its values on Lua's C stack (about 8000 slots): HDEL and HSET get at most this many at once.
local BATCH = 500
-- Ended entries dropped after one change (core's DENY_EXPIRE_MAX).
local EXPIRE_MAX = 100

-- Adds one to the version and keeps and announces the change's text, made as core's stampChangeText makes it:
-- the epoch is JSON-safe (core's newEpoch), the version an integer, `rest` the change's text after its '{'.
local function record(epoch, rest)
  local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
  local separator = ','
  if rest == '}' then separator = '' end
  local text = '{"epoch":"' .. epoch .. '","version":' .. string.format('%d', version) .. separator .. rest
  redis.call('LPUSH', KEYS[3], text)
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[3]) - 1)
  if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], text) end
  return version
end

local epoch = redis.call('HGET', KEYS[2], 'epoch')
if not epoch then
  -- A new life of the list. Entries or a log left without their version are the remains of a list the store
  -- partly lost; watchers were told it is gone (no version), so the new list starts empty, as they believe.
  epoch = ARGV[1]
  redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
  redis.call('HSET', KEYS[2], 'epoch', epoch, 'version', 0)
end

if ARGV[5] == '1' then redis.call('DEL', KEYS[1], KEYS[4]) end
local first = 8
local last = 7 + tonumber(ARGV[7])
local removed = 0
for from = first, last, BATCH do
  local matches = { unpack(ARGV, from, math.min(from + BATCH - 1, last)) }
  removed = removed + redis.call('HDEL', KEYS[1], unpack(matches))
  redis.call('ZREM', KEYS[4], unpack(matches))
end
for i = last + 1, #ARGV, 3 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  if ARGV[i + 2] == '' then
    redis.call('ZREM', KEYS[4], ARGV[i])
  else
    redis.call('ZADD', KEYS[4], ARGV[i + 2], ARGV[i])
  end
end

local version = record(epoch, string.sub(ARGV[4], 2))
if ARGV[6] ~= '' then
  local ended = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[6], 'LIMIT', 0, EXPIRE_MAX)
  if #ended > 0 then
    redis.call('HDEL', KEYS[1], unpack(ended))
    redis.call('ZREM', KEYS[4], unpack(ended))
    version = record(epoch, string.sub(cjson.encode({ remove = ended }), 2))
  end
end
return { REPLY_MARK .. epoch, REPLY_MARK .. string.format('%d', version), REPLY_MARK .. string.format('%d', removed) }
