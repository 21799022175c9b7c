-- Fleet analytics' publish (core's AnalyticsStore.publish) for the Upstash store, whose REST clients have no
-- common MULTI: one EVAL adds one instance's counts for one limiter's seconds, the key layout of the Redis store.
-- KEYS[1]: the names index (zset: limiter name -> latest second published); then, per second i, KEYS[2i] its counts
-- hash and KEYS[2i+1] its top zset. ARGV[1]: the limiter's name; ARGV[2]: the retention, in seconds; ARGV[3]: the
-- oldest second kept in the names index; then, per second: the second, its five counts (allowed, limited,
-- shadowLimited, shed, degraded), the number n of top identities, and n pairs identity, refusals.
-- Each second's keys expire at the second plus the retention. ZADD without GT (Redis 6.2+): the score only rises.
local fields = { 'allowed', 'limited', 'shadowLimited', 'shed', 'degraded' }
local retention = tonumber(ARGV[2])
local at = 4
local latest = -1
for i = 1, (#KEYS - 1) / 2 do
  local hash, top = KEYS[2 * i], KEYS[2 * i + 1]
  local second = tonumber(ARGV[at])
  for f = 1, 5 do
    local count = tonumber(ARGV[at + f])
    if count > 0 then redis.call('HINCRBY', hash, fields[f], count) end
  end
  redis.call('EXPIREAT', hash, second + retention)
  local n = tonumber(ARGV[at + 6])
  at = at + 7
  for _ = 1, n do
    redis.call('ZINCRBY', top, ARGV[at + 1], ARGV[at])
    at = at + 2
  end
  if n > 0 then redis.call('EXPIREAT', top, second + retention) end
  if second > latest then latest = second end
end
local known = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]) or '-1')
if latest > known then redis.call('ZADD', KEYS[1], latest, ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
redis.call('EXPIRE', KEYS[1], retention)
return 1
