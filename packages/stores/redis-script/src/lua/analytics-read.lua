-- Fleet analytics' reads (core's AnalyticsStore.read and names) for the Upstash store, each in one EVAL: over REST
-- a command per second of a range would be a request per second.
-- ARGV[1] 'names': KEYS[1] the names index; ARGV[2] the oldest second kept; returns the names published since.
-- ARGV[1] 'read': per second i, KEYS[2i-1] its counts hash and KEYS[2i] its top zset; returns, per second, the
-- hash's fields and values and the top zset's members and scores, most refused first (empty for a missing key).
if ARGV[1] == 'names' then
  return redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], '+inf')
end
local replies = {}
for i = 1, #KEYS / 2 do
  replies[2 * i - 1] = redis.call('HGETALL', KEYS[2 * i - 1])
  replies[2 * i] = redis.call('ZREVRANGE', KEYS[2 * i], 0, -1, 'WITHSCORES')
end
return replies
