/**
 * The Lua executor of one decision: every rule of one identity read, stepped and written in one script, so a
 * decision (compound rules included) is exactly one EVALSHA round trip and atomic on the server.
 *
 * Each step below is a line-by-line transcription of the JS step in @sluice/core (packages/core/src/algorithms)
 * and the driver is `evaluate()` from core's rules.ts. Redis Lua numbers are IEEE doubles like JS numbers, and
 * every expression keeps the JS operation order, so `floor(a / b)` and friends round identically: the
 * differential tests in test/redis hold the two equal event by event. Change both or neither.
 *
 * KEYS[i]: state of rule i (`prefix:limiter:{identity}:ruleId`, one hash slot per identity).
 * ARGV: mode ('consume' | 'peek' | 'refund'), cost, now (epoch ms, or '' to read Redis TIME), then five values
 * per rule: algorithm code and four integer parameters (see RULE_STRIDE in arguments.ts).
 * Reply (integers only, no fraction ever leaves the script): now, all-allowed (1/0), then per rule
 * allowed (1/0), remaining, resetAt, retryAt (-1 = never).
 * State: the rule's integers joined by ',' (core's encodeState), stored with PX = the step's ttlMs, or deleted
 * when ttlMs <= 0 (state that old is equivalent to none). No key is ever written without an expiry.
 * With the client's clock, Redis still expires keys by its own clock, which need not run with the client's (a
 * slower or frozen client clock, as in tests): keys then live CLIENT_CLOCK_EXPIRY_SLACK_MS longer, so state is
 * never lost before the client's clock says so. Core's steps read expired state exactly as no state, so the
 * extra life never changes a decision; it only delays garbage collection.
 */
export const LIMIT_SCRIPT: string = `local floor, min, max = math.floor, math.min, math.max
local NEVER = -1

local function ceil_div(a, b)
  local q = floor(a / b)
  if a - q * b > 0 then return q + 1 end
  return q
end

local function approach(level, target, elapsed, rate, rising)
  local gap
  if rising then gap = target - level else gap = level - target end
  if gap <= 0 then return target end
  if elapsed >= ceil_div(gap, rate) then return target end
  if rising then return level + elapsed * rate end
  return level - elapsed * rate
end

-- Each step returns: allowed, next state (array), remaining, resetAt, retryAt, ttlMs.

local function fixed_window(s, now, cost, mode, limit, window, offset)
  local start = floor((now - offset) / window) * window + offset
  local count = 0
  if s then
    if s[1] >= start then
      start = s[1]
      count = s[2]
    end
  end
  local finish = start + window
  local allowed = true
  if mode == 'refund' then
    count = max(0, count - cost)
  else
    allowed = count + cost <= limit
    if allowed and mode == 'consume' then count = count + cost end
  end
  -- An empty window is already at full capacity: it resets now and needs no state.
  local reset_at = now
  if count > 0 then reset_at = finish end
  local retry = finish
  if allowed then retry = now elseif cost > limit then retry = NEVER end
  return allowed, {start, count}, max(0, limit - count), reset_at, retry, reset_at - now
end

local function sliding_log(s, now, cost, mode, limit, window)
  local log = s or {}
  local n = #log
  local t = now
  if n > 0 then t = max(now, log[n - 1]) end
  local first = 1
  while first <= n and log[first] + window <= t do first = first + 2 end
  local live = {}
  for i = first, n do live[#live + 1] = log[i] end
  local used = 0
  for i = 2, #live, 2 do used = used + live[i] end
  local allowed, retry = true, now
  if mode == 'refund' then
    local left = cost
    while left > 0 and #live > 0 do
      local last = #live
      local take = min(left, live[last])
      left = left - take
      used = used - take
      if take == live[last] then
        live[last] = nil
        live[last - 1] = nil
      else
        live[last] = live[last] - take
      end
    end
  else
    allowed = used + cost <= limit
    if allowed and mode == 'consume' and cost > 0 then
      local m = #live
      if m > 0 and live[m - 1] == t then
        live[m] = live[m] + cost
      else
        live[m + 1] = t
        live[m + 2] = cost
      end
      used = used + cost
    end
    if not allowed then
      retry = NEVER
      if cost <= limit then
        local freed = 0
        for i = 1, #live, 2 do
          freed = freed + live[i + 1]
          if used - freed + cost <= limit then
            retry = live[i] + window
            break
          end
        end
      end
    end
  end
  local reset_at = t
  if #live > 0 then reset_at = live[#live - 1] + window end
  return allowed, live, max(0, limit - used), reset_at, retry, reset_at - now
end

local function decayed_by(count, room, window)
  if count <= room then return 0 end
  return floor((window * (count - room - 1)) / count) + 1
end

local function sliding_counter(s, now, cost, mode, limit, window)
  local start = floor(now / window) * window
  local previous, current, t = 0, 0, now
  if s then
    local stored_start = s[1]
    if stored_start >= start then
      if stored_start > start then t = stored_start end
      start = stored_start
      previous = s[2]
      current = s[3]
    elseif stored_start + window == start then
      previous = s[3]
    end
  end
  local elapsed = t - start
  local weighted = floor((previous * (window - elapsed)) / window)
  local allowed, retry = true, now
  if mode == 'refund' then
    current = max(0, current - cost)
  else
    allowed = weighted + current + cost <= limit
    if allowed and mode == 'consume' then current = current + cost end
    if not allowed then
      if cost > limit then
        retry = NEVER
      elseif current + cost <= limit then
        retry = start + decayed_by(previous, limit - current - cost, window)
      else
        retry = start + window + decayed_by(current, limit - cost, window)
      end
    end
  end
  local reset_at = t
  if current > 0 then
    reset_at = start + window + decayed_by(current, 0, window)
  elseif previous > 0 then
    reset_at = max(t, start + decayed_by(previous, 0, window))
  end
  return allowed, {start, previous, current}, max(0, limit - weighted - current), reset_at, retry, reset_at - now
end

local function token_smooth(s, now, cost, mode, capacity, rate, interval)
  local full = capacity * interval
  local level = full
  local t = now
  if s then
    local last = s[2]
    t = max(now, last)
    level = approach(min(s[1], full), full, t - last, rate, true)
  end
  local need = cost * interval
  local allowed, retry = true, now
  if mode == 'refund' then
    level = min(full, level + need)
  else
    allowed = level >= need
    if allowed and mode == 'consume' then level = level - need end
    if not allowed then
      if cost > capacity then retry = NEVER else retry = t + ceil_div(need - level, rate) end
    end
  end
  local reset_at = t + ceil_div(full - level, rate)
  return allowed, {level, t}, floor(level / interval), reset_at, retry, reset_at - now
end

local function token_interval(s, now, cost, mode, capacity, rate, interval)
  local tick = floor(now / interval)
  local tokens = capacity
  if s then
    local last_tick = s[2]
    tokens = min(s[1], capacity)
    if tick <= last_tick then
      tick = last_tick
    else
      tokens = approach(tokens, capacity, tick - last_tick, rate, true)
    end
  end
  local allowed, retry = true, now
  if mode == 'refund' then
    tokens = min(capacity, tokens + cost)
  else
    allowed = tokens >= cost
    if allowed and mode == 'consume' then tokens = tokens - cost end
    if not allowed then
      if cost > capacity then retry = NEVER else retry = (tick + ceil_div(cost - tokens, rate)) * interval end
    end
  end
  local reset_at
  if tokens >= capacity then
    reset_at = max(now, tick * interval)
  else
    reset_at = (tick + ceil_div(capacity - tokens, rate)) * interval
  end
  return allowed, {tokens, tick}, tokens, reset_at, retry, reset_at - now
end

local function token_bucket(s, now, cost, mode, capacity, rate, interval, refill)
  if refill == 1 then return token_interval(s, now, cost, mode, capacity, rate, interval) end
  return token_smooth(s, now, cost, mode, capacity, rate, interval)
end

local function leaky_bucket(s, now, cost, mode, capacity, rate, interval)
  local brim = capacity * interval
  local level = 0
  local t = now
  if s then
    local last = s[2]
    t = max(now, last)
    level = approach(s[1], 0, t - last, rate, false)
  end
  local pour = cost * interval
  local allowed, retry = true, now
  if mode == 'refund' then
    level = max(0, level - pour)
  else
    allowed = level + pour <= brim
    if allowed and mode == 'consume' then level = level + pour end
    if not allowed then
      if cost > capacity then retry = NEVER else retry = t + ceil_div(level + pour - brim, rate) end
    end
  end
  local reset_at = t + ceil_div(level, rate)
  return allowed, {level, t}, floor((brim - level) / interval), reset_at, retry, reset_at - now
end

local function gcra(s, now, cost, mode, limit, period, burst)
  local tolerance = burst * period
  local ahead = 0
  if s and s[1] >= now then
    ahead = min(s[1] - now, ceil_div(tolerance, limit) + 1) * limit + s[2]
  end
  local spend = cost * period
  local allowed, retry = true, now
  if mode == 'refund' then
    ahead = max(0, ahead - spend)
  else
    allowed = ahead + spend <= tolerance
    if allowed and mode == 'consume' then ahead = ahead + spend end
    if not allowed then
      if cost > burst then retry = NEVER else retry = now + ceil_div(ahead + spend - tolerance, limit) end
    end
  end
  local whole = floor(ahead / limit)
  local reset_at = now + ceil_div(ahead, limit)
  return allowed, {now + whole, ahead - whole * limit}, floor((tolerance - min(ahead, tolerance)) / period),
    reset_at, retry, reset_at - now
end

local STEPS = {
  fw = fixed_window, swl = sliding_log, swc = sliding_counter, tb = token_bucket, lb = leaky_bucket, gcra = gcra,
}

-- core's decodeState: integers joined by ','; anything not a safe integer counts as no state rather than admitting NaN.
local find, sub, format = string.find, string.sub, string.format
local MAX_SAFE = 9007199254740991
local function decode(text)
  if not text or text == '' then return nil end
  local state, n, at = {}, 0, 1
  while true do
    local comma = find(text, ',', at, true)
    local part = sub(text, at, (comma or 0) - 1)
    local value = 0 -- Number('') is 0 in JS
    if part ~= '' then value = tonumber(part) end
    if value == nil or value ~= floor(value) or value > MAX_SAFE or value < -MAX_SAFE then return nil end
    n = n + 1
    state[n] = value
    if not comma then return state end
    at = comma + 1
  end
end

-- '%d' prints every integer below 2^53 exactly (tostring would round past 14 digits).
local function encode(state)
  local n = #state
  if n == 2 then return format('%d,%d', state[1], state[2]) end
  if n == 3 then return format('%d,%d,%d', state[1], state[2], state[3]) end
  local parts = {}
  for i = 1, n do parts[i] = format('%d', state[i]) end
  return table.concat(parts, ',')
end

local mode = ARGV[1]
local cost = tonumber(ARGV[2])
local now
local slack = 1000 -- CLIENT_CLOCK_EXPIRY_SLACK_MS
if ARGV[3] == '' then
  slack = 0
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
else
  now = tonumber(ARGV[3])
end

local n = #KEYS
local rules, states, steps = {}, {}, {}
local allowed = true
for i = 1, n do
  local base = 3 + (i - 1) * 5
  local rule = {STEPS[ARGV[base + 1]], tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]),
    tonumber(ARGV[base + 4]), tonumber(ARGV[base + 5])}
  if rule[1] == nil then return redis.error_reply('sluice: unknown algorithm ' .. tostring(ARGV[base + 1])) end
  rules[i] = rule
  states[i] = decode(redis.call('GET', KEYS[i]))
  local step = {rule[1](states[i], now, cost, mode, rule[2], rule[3], rule[4], rule[5])}
  steps[i] = step
  if not step[1] then allowed = false end
end

-- All-or-nothing: when one rule denies a consume, the rules that would have consumed report their state untouched.
if not allowed and mode == 'consume' and n > 1 then
  for i = 1, n do
    if steps[i][1] then
      local rule = rules[i]
      steps[i] = {rule[1](states[i], now, cost, 'peek', rule[2], rule[3], rule[4], rule[5])}
    end
  end
end

if (mode == 'consume' and allowed and cost > 0) or (mode == 'refund' and cost > 0) then
  for i = 1, n do
    local ttl = steps[i][6]
    if ttl > 0 then
      redis.call('SET', KEYS[i], encode(steps[i][2]), 'PX', ttl + slack)
    else
      redis.call('DEL', KEYS[i])
    end
  end
end

local reply = {now, allowed and 1 or 0}
for i = 1, n do
  local step = steps[i]
  reply[#reply + 1] = step[1] and 1 or 0
  reply[#reply + 1] = step[3]
  reply[#reply + 1] = step[4]
  reply[#reply + 1] = step[5]
end
return reply
`;

/** Extra key lifetime with `clock: 'client'` (see above); with Redis TIME keys live exactly ttlMs. */
export const CLIENT_CLOCK_EXPIRY_SLACK_MS = 1000;

/** SHA-1 of LIMIT_SCRIPT, for EVALSHA. A test recomputes it; update both together. */
export const LIMIT_SCRIPT_SHA1 = '930cd72d28e26afdc6ae6b33ee51206ed349cff8';
