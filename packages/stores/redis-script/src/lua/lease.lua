--- Concurrency leases: core's evaluateLease() (packages/core/src/leases.ts) in one atomic call, the seed's
--- "concurrent requests limiter" sorted set. A script of its own (LEASE_SCRIPT), not a mode of the limit driver:
--- see lease-script.ts for the protocol and why.
--- KEYS[1]: the lease record, `prefix:limiter:{identity}:lease`: a sorted set, member = lease id, score = its expiry (ms).
--- ARGV: op ('acquire', 'release' or 'extend'), id, limit, ttlMs, and optionally '@ms' (the client's clock; without
--- it the call reads Redis TIME). Reply: now, ok (1/0), held, expiresAt (-1 = none), as LeaseResult.
local floor, to_number, match = math.floor, tonumber, string.match
if #KEYS ~= 1 or #ARGV < 4 or #ARGV > 5 then return redis.error_reply('sluice: a lease call needs 1 key and 4 or 5 arguments') end
local key, op, id = KEYS[1], ARGV[1], ARGV[2]
if op ~= 'acquire' and op ~= 'release' and op ~= 'extend' then return redis.error_reply('sluice: unknown lease operation ' .. op) end
if #id > 64 or not match(id, '^[%w_%-]+$') then return redis.error_reply('sluice: malformed lease id ' .. id) end
local limit, ttl = match(ARGV[3], '^%d+$'), match(ARGV[4], '^%d+$')
if not limit or not ttl then return redis.error_reply('sluice: malformed lease limit or ttl') end
limit, ttl = to_number(limit), to_number(ttl)
if (op == 'acquire' and limit < 1) or (op ~= 'release' and ttl < 1) then
  return redis.error_reply('sluice: a lease needs a positive limit and ttl')
end

-- The clock: Redis TIME, unless the call carries '@ms' (the client's). With the client's clock Redis still expires
-- the record by its own, so it lives 1000 ms longer (CLIENT_CLOCK_EXPIRY_SLACK_MS, as the limit script's keys).
local now, slack
if ARGV[5] then
  now = match(ARGV[5], '^@(%d+)$')
  if not now then return redis.error_reply('sluice: malformed clock ' .. ARGV[5]) end
  now, slack = to_number(now), 1000 -- CLIENT_CLOCK_EXPIRY_SLACK_MS
else
  local time = redis.call('TIME')
  now, slack = to_number(time[1]) * 1000 + floor(to_number(time[2]) / 1000), 0
end

-- Expired leases (expiry <= now) go first: what is left is live.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local mine = redis.call('ZSCORE', key, id)
local held = redis.call('ZCARD', key)
local ok, expires_at = 0, -1
if op == 'acquire' then
  if mine or held < limit then
    -- Granted: a new lease, or the id's own renewed (counted once).
    ok, expires_at = 1, now + ttl
    redis.call('ZADD', key, expires_at, id)
    if not mine then held = held + 1 end
  else
    -- Refused: the earliest expiry held (a slot frees by then at the latest).
    expires_at = to_number(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
  end
elseif op == 'release' then
  if mine then
    ok, held = 1, held - 1
    redis.call('ZREM', key, id)
  end
elseif mine then -- extend: a live lease only
  ok, expires_at = 1, now + ttl
  redis.call('ZADD', key, expires_at, id)
end

-- The record lives until its latest lease expires; an empty one is deleted. On Redis TIME that instant is absolute
-- (PEXPIREAT: PEXPIRE would count latest - now from the server's command time, not from the TIME read above).
if held == 0 then
  redis.call('DEL', key)
else
  local latest = to_number(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
  if slack == 0 then
    redis.call('PEXPIREAT', key, latest)
  else
    redis.call('PEXPIRE', key, latest - now + slack)
  end
end
return {now, ok, held, expires_at}
