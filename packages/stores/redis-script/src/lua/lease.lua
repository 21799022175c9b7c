--- Concurrency leases: core's evaluateLease() (packages/core/src/store/leases.ts) in one atomic call, the sorted set
--- of the "concurrent requests limiter" in the article 'Scaling your API with rate limiters'. A script of its own
--- (LEASE_SCRIPT), not an operation of the limit driver: see lease-script.ts for the protocol and why.
--- One call carries n >= 1 operations, run in order, each as evaluateLease with the one before it applied.
--- KEYS[i]: operation i's lease record, `prefix:limiter:{identity}:lease`: a sorted set, member = lease id, score =
--- its expiry (ms). ARGV: per operation op ('acquire', 'release' or 'extend'), id, limit, ttlMs, and with the
--- client's clock a fifth, '@ms' (then every operation has it); without it the call reads Redis TIME once.
--- Reply: per operation now, ok (1/0), held, expiresAt (-1 = none), as LeaseResult.
local floor, to_number, match = math.floor, tonumber, string.match
local n = #KEYS
local width = (n >= 1 and #ARGV == 4 * n and 4) or (n >= 1 and #ARGV == 5 * n and 5) or nil
if not width then return redis.error_reply('sluice: a lease call needs n keys and 4 or 5 arguments per key') end

-- Every operation is checked before any runs: a malformed one fails the call having written nothing.
local ops, ids, limits, ttls, clocks = {}, {}, {}, {}, {}
for i = 1, n do
  local at = (i - 1) * width
  local op, id = ARGV[at + 1], ARGV[at + 2]
  if op ~= 'acquire' and op ~= 'release' and op ~= 'extend' then return redis.error_reply('sluice: unknown lease operation ' .. op) end
  if #id > 64 or not match(id, '^[%w_%-]+$') then return redis.error_reply('sluice: malformed lease id ' .. id) end
  local limit, ttl = match(ARGV[at + 3], '^%d+$'), match(ARGV[at + 4], '^%d+$')
  if not limit or not ttl then return redis.error_reply('sluice: malformed lease limit or ttl') end
  limit, ttl = to_number(limit), to_number(ttl)
  if (op == 'acquire' and limit < 1) or (op ~= 'release' and ttl < 1) then
    return redis.error_reply('sluice: a lease needs a positive limit and ttl')
  end
  if width == 5 then
    local now = match(ARGV[at + 5], '^@(%d+)$')
    if not now then return redis.error_reply('sluice: malformed clock ' .. ARGV[at + 5]) end
    clocks[i] = to_number(now)
  end
  ops[i], ids[i], limits[i], ttls[i] = op, id, limit, ttl
end

-- The clock: Redis TIME, unless the call carries '@ms' (the client's). With the client's clock Redis still expires
-- the record by its own, so it lives 1000 ms longer (CLIENT_CLOCK_EXPIRY_SLACK_MS, as the limit script's keys).
local store_now, slack = nil, 1000 -- CLIENT_CLOCK_EXPIRY_SLACK_MS
if width == 4 then
  local time = redis.call('TIME')
  store_now, slack = to_number(time[1]) * 1000 + floor(to_number(time[2]) / 1000), 0
end

-- What the call knows of each record it touches: `at`, the now its expired leases were last dropped at (until the
-- clock moves, nothing more can expire); `held`, its live leases; `earliest`, their earliest expiry once read (nil
-- after a change); `changed`, whether the call wrote it; `now`, the time of the last operation on it.
local records, touched, reply = {}, {}, {}
for i = 1, n do
  local key, op, id, ttl = KEYS[i], ops[i], ids[i], ttls[i]
  local now = store_now or clocks[i]
  local record = records[key]
  if not record then
    record = { changed = false }
    records[key] = record
    touched[#touched + 1] = key
  end
  if record.at ~= now then
    -- Expired leases (expiry <= now) go first: what is left is live.
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    record.at, record.held, record.earliest = now, redis.call('ZCARD', key), nil
  end
  record.now = now
  local held, ok, expires_at = record.held, 0, -1
  if op == 'acquire' then
    -- Under the limit, granted without asking whether the id is held (ZADD says: a renewal adds nothing); at the
    -- limit, only an id already held is granted (renewed, counted once).
    if held < limits[i] or redis.call('ZSCORE', key, id) then
      ok, expires_at = 1, now + ttl
      held = held + redis.call('ZADD', key, expires_at, id)
    else
      -- Refused: the earliest expiry held (a slot frees by then at the latest).
      record.earliest = record.earliest or to_number(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
      expires_at = record.earliest
    end
  elseif op == 'release' then
    -- Only live leases are left: ZREM frees the id when it was held and live.
    if redis.call('ZREM', key, id) == 1 then ok, held = 1, held - 1 end
  elseif redis.call('ZSCORE', key, id) then -- extend: a live lease only
    ok, expires_at = 1, now + ttl
    redis.call('ZADD', key, expires_at, id)
  end
  if ok == 1 then record.held, record.earliest, record.changed = held, nil, true end
  local at = (i - 1) * 4
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = now, ok, held, expires_at
end

-- Each record lives until its latest lease expires; an empty one is gone (Redis deletes an emptied sorted set).
-- On Redis TIME that instant is absolute (PEXPIREAT: PEXPIRE would count latest - now from the server's command
-- time, not from the TIME read above), and only a record the call changed needs it: one it did not change still
-- has the expiry set when it last changed, its latest lease's (dropping expired leases never drops the latest
-- live one). On the client's clock it is set as after the record's last operation, changed or not.
for _, key in ipairs(touched) do
  local record = records[key]
  if record.held > 0 and (record.changed or slack ~= 0) then
    local latest = to_number(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
    if slack == 0 then
      redis.call('PEXPIREAT', key, latest)
    else
      redis.call('PEXPIRE', key, latest - record.now + slack)
    end
  end
end
return reply
