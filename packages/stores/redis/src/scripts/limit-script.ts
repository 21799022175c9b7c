/**
 * The Lua executor: one script call runs one decision, or a batch of decisions that were issued together, each
 * decision atomic and in order (the call as a whole is atomic on the server). Every rule of every decision is
 * read, stepped and written inside the call, so a decision (compound rules included) costs exactly one round
 * trip, and a batch of them still one.
 *
 * Each step below is a line-by-line transcription of the JS step in @sluice/core (packages/core/src/algorithms)
 * and the driver is `evaluate()` from core's rules.ts. Redis Lua numbers are IEEE doubles like JS numbers, and
 * every expression keeps the JS operation order, so `floor(a / b)` and friends round identically: the
 * differential tests in test/redis hold the two equal event by event, batched calls included. Change both or
 * neither.
 *
 * KEYS: the state keys of every rule of every decision, decision after decision
 * (`prefix:limiter:{identity}:ruleId`, one hash slot per identity). A key may appear in several decisions.
 * ARGV: a sequence of entries (see arguments.ts, which writes them):
 *   '@ms'          the client's clock for the decisions that follow; a call whose first entry is not '@' reads
 *                  Redis TIME once instead (the store clock) and may not carry '@' entries.
 *   '#code a b c'  the rules of the decisions that follow, one `code a b c` per rule joined by ' ' (three
 *                  integer parameters, unused ones 0). Decisions of one limiter share one spec entry.
 *   'cost'         a decision that consumes; 'p' + cost peeks, 'r' + cost refunds. It takes the next KEYS, one
 *                  per rule of the current spec.
 * Reply, flat, integers only (no fraction ever leaves the script): the store clock's now (0 with the client's
 * clock), then per decision and rule allowed (1/0), remaining, resetAt, retryAt (-1 = never). Whether the
 * decision as a whole is allowed is every rule's allowed: a rule that only looked, in an all-or-nothing denial,
 * reports allowed as the rule itself would have.
 *
 * Redis commands per call: one TIME (store clock only), one MGET of every key, one SET ... PX per key written
 * (only when a decision consumes or refunds), one DEL for state that is already worthless. Later decisions of a
 * call see earlier ones' writes through a Lua table, and each key is written once, with its last state, after
 * every decision was stepped: a call that fails on malformed input writes nothing. Algorithm steps are built on
 * first use and specs parsed once per call: defining every function on every call was a measurable cost.
 *
 * The same text ships two ways: LIMIT_SCRIPT for EVALSHA (everywhere: Redis 2.6+, Cluster, Upstash) and
 * LIMIT_LIBRARY, a Redis 7 Function library, for FCALL, where the helpers, the built steps and the parsed specs
 * outlive the call (the measured saving is about a quarter of a lone decision's time in Redis). Library code may
 * not touch the standard libraries while it loads, so the library binds its locals on its first call.
 * State: the rule's integers joined by ',' (core's encodeState), stored with PX = the step's ttlMs, or deleted
 * when ttlMs <= 0 (state that old is equivalent to none). No key is ever written without an expiry.
 * With the client's clock, Redis still expires keys by its own clock, which need not run with the client's (a
 * slower or frozen client clock, as in tests): keys then live CLIENT_CLOCK_EXPIRY_SLACK_MS longer, so a client
 * clock that falls behind Redis's by less than that never loses state early. A clock that stands still (a frozen
 * test clock) does lose it once ttl + slack has passed in Redis real time (issue 8 item 5; the Redis README states
 * the rule). Core's steps read expired state exactly as no state, so the extra life never changes a decision.
 */
/** The standard functions the executor uses, bound to locals (faster than global lookups on every call). */
const LOCALS = 'floor, min, max, to_number, find, sub, byte, match, format, concat';
const GLOBALS = 'math.floor, math.min, math.max, tonumber, string.find, string.sub, string.byte, string.match, string.format, table.concat';

/** Helpers, algorithm steps (built on first use), the spec parser and the state encoder. */
const PRELUDE = `local NEVER = -1
local MAX_SAFE = 9007199254740991

local function ceil_div(a, b)
  local q = floor(a / b)
  if a - q * b > 0 then return q + 1 end
  return q
end

-- core's rescale(): an amount in units of 1/from re-expressed in units of 1/to, rounded down (or up).
local function rescale(value, from, to, up)
  if from == to then return value end
  local whole = floor(value / from)
  local product = (value - whole * from) * to
  if up then return whole * to + ceil_div(product, from) end
  return whole * to + floor(product / from)
end

local function approach(level, target, elapsed, rate, rising)
  local gap
  if rising then gap = target - level else gap = level - target end
  if gap <= 0 then return target end
  if elapsed >= ceil_div(gap, rate) then return target end
  if rising then return level + elapsed * rate end
  return level - elapsed * rate
end

-- Each step returns: allowed, next state (array), remaining, resetAt, retryAt, ttlMs. A step is built the first
-- time a decision of the call needs it: defining every algorithm on every call was a measurable share of the cost.
local built = {}
local function step_for(code)
  local f = built[code]
  if f then return f end
  if code == 'fw' then
    f = function(s, now, cost, mode, limit, window, offset)
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
        allowed = cost == 0 or count + cost <= limit
        if allowed and mode == 'consume' then count = count + cost end
      end
      -- An empty window is already at full capacity: it resets now and needs no state.
      local reset_at = now
      if count > 0 then reset_at = finish end
      local retry = finish
      if allowed then retry = now elseif cost > limit then retry = NEVER end
      return allowed, {start, count}, max(0, limit - count), reset_at, retry, reset_at - now
    end
  elseif code == 'swl' then
    f = function(s, now, cost, mode, limit, window)
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
        allowed = cost == 0 or used + cost <= limit
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
  elseif code == 'swc' then
    local function decayed_by(count, room, window)
      if count <= room then return 0 end
      return floor((window * (count - room - 1)) / count) + 1
    end
    f = function(s, now, cost, mode, limit, window)
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
      if weighted == 0 then previous = 0 end
      local allowed, retry = true, now
      if mode == 'refund' then
        current = max(0, current - cost)
      else
        allowed = cost == 0 or weighted + current + cost <= limit
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
  elseif code == 'tbs' then
    -- token bucket, smooth refill
    f = function(s, now, cost, mode, capacity, rate, interval)
      local full = capacity * interval
      local level = full
      local t = now
      if s then
        local last = s[2]
        t = max(now, last)
        level = approach(min(rescale(s[1], s[3] or interval, interval), full), full, t - last, rate, true)
      end
      local need = cost * interval
      local allowed, retry = true, now
      if mode == 'refund' then
        level = min(full, level + need)
      else
        allowed = cost == 0 or level >= need
        if allowed and mode == 'consume' then level = level - need end
        if not allowed then
          if cost > capacity then retry = NEVER else retry = t + ceil_div(need - level, rate) end
        end
      end
      local reset_at = t + ceil_div(full - level, rate)
      return allowed, {level, t, interval}, floor(level / interval), reset_at, retry, reset_at - now
    end
  elseif code == 'tbi' then
    -- token bucket, refill at interval boundaries
    f = function(s, now, cost, mode, capacity, rate, interval)
      local tick = floor(now / interval)
      local tokens = capacity
      local last = now
      if s then
        last = max(now, s[2])
        local last_tick = floor(s[2] / interval)
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
        allowed = cost == 0 or tokens >= cost
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
      return allowed, {tokens, last}, tokens, reset_at, retry, max(reset_at, last) - now
    end
  elseif code == 'lb' then
    f = function(s, now, cost, mode, capacity, rate, interval)
      local brim = capacity * interval
      local level = 0
      local t = now
      if s then
        local last = s[2]
        t = max(now, last)
        level = approach(rescale(s[1], s[3] or interval, interval, true), 0, t - last, rate, false)
      end
      local pour = cost * interval
      local allowed, retry = true, now
      if mode == 'refund' then
        level = max(0, level - pour)
      else
        allowed = cost == 0 or level + pour <= brim
        if allowed and mode == 'consume' then level = level + pour end
        if not allowed then
          if cost > capacity then retry = NEVER else retry = t + ceil_div(level + pour - brim, rate) end
        end
      end
      local reset_at = t + ceil_div(level, rate)
      return allowed, {level, t, interval}, floor((brim - level) / interval), reset_at, retry, reset_at - now
    end
  elseif code == 'gcra' then
    f = function(s, now, cost, mode, limit, period, burst)
      local tolerance = burst * period
      local ahead = 0
      if s and s[1] >= now then
        local remainder = min(limit - 1, rescale(s[2], s[3] or limit, limit, true))
        ahead = min(s[1] - now, ceil_div(tolerance, limit) + 1) * limit + remainder
      end
      local spend = cost * period
      local allowed, retry = true, now
      if mode == 'refund' then
        ahead = max(0, ahead - spend)
      else
        allowed = cost == 0 or ahead + spend <= tolerance
        if allowed and mode == 'consume' then ahead = ahead + spend end
        if not allowed then
          if cost > burst then retry = NEVER else retry = now + ceil_div(ahead + spend - tolerance, limit) end
        end
      end
      local whole = floor(ahead / limit)
      local reset_at = now + ceil_div(ahead, limit)
      return allowed, {now + whole, ahead - whole * limit, limit}, floor((tolerance - min(ahead, tolerance)) / period),
        reset_at, retry, reset_at - now
    end
  else
    return nil
  end
  built[code] = f
  return f
end

-- '#code a b c[ code a b c...]': the rules of the decisions that follow (three integer parameters per rule, unused
-- ones 0). A call usually carries one spec for all its decisions; each distinct text is parsed once per call (once
-- per library load for the Redis Function, whose cache is bounded: staggered windows make one spec per identity).
local specs, spec_count = {}, 0
local function rules_of(spec)
  local rules = specs[spec]
  if rules then return rules end
  rules = {}
  local at, n, last = 2, 0, #spec
  while true do
    local _, e, code, a, b, c = find(spec, '^(%l+) (%d+) (%d+) (%d+)', at)
    if not e then return nil end
    local step = step_for(code)
    if not step then return nil end
    n = n + 1
    rules[n] = {step, to_number(a), to_number(b), to_number(c)}
    if e == last then break end
    if byte(spec, e + 1) ~= 32 then return nil end
    at = e + 2
  end
  spec_count = spec_count + 1
  if spec_count > 256 then
    specs, spec_count = {}, 1
  end
  specs[spec] = rules
  return rules
end

-- '%d' prints every integer below 2^53 exactly (tostring would round past 14 digits).
local function encode(state)
  local n = #state
  if n == 2 then return format('%d,%d', state[1], state[2]) end
  if n == 3 then return format('%d,%d,%d', state[1], state[2], state[3]) end
  local parts = {}
  for i = 1, n do parts[i] = format('%d', state[i]) end
  return concat(parts, ',')
end

-- Per-call tables: key -> state (false: none), the last state written and its ttl. A Redis Function keeps them
-- across calls (allocating them was a measurable share of a lone decision): a call that completes empties them,
-- one that does not (an error) leaves them dirty, and the next call starts new ones.
local state, final, final_ttl, dirty = {}, {}, {}, false
local prior, ok, nxt, remaining, reset_at, retry_at, ttl -- per-rule scratch, made on the first compound decision
`;

/** One call: KEYS and ARGV in, the flat reply out. */
const BODY = `local nkeys, nargs = #KEYS, #ARGV
if nkeys == 0 or nargs < 2 then return redis.error_reply('sluice: a call needs KEYS and decisions') end
-- The clock: Redis TIME, read once for the call, unless the call opens with '@ms' (the client's clock).
local now, slack, client_clock = 0, 0, byte(ARGV[1]) == 64
if client_clock then
  slack = 1000 -- CLIENT_CLOCK_EXPIRY_SLACK_MS
else
  local time = redis.call('TIME')
  now = to_number(time[1]) * 1000 + floor(to_number(time[2]) / 1000)
end

-- Every key is read once, by one MGET. Later decisions of the call see earlier ones' writes through the state
-- table, and each key is written once, at the end, with its last state. core's decodeState: integers joined by
-- ','; anything not a safe integer is no state (false) rather than NaN.
if dirty then state, final, final_ttl = {}, {}, {} end
dirty = true
local stored = redis.call('MGET', unpack(KEYS))
for i = 1, nkeys do
  local key = KEYS[i]
  if state[key] == nil then
    local text, s = stored[i], false
    if text and text ~= '' then
      local x, y = match(text, '^(%d+),(%d+)$')
      if x then
        x, y = to_number(x), to_number(y)
        if x <= MAX_SAFE and y <= MAX_SAFE then s = {x, y} end
      else
        s = {}
        local n, at = 0, 1
        while true do
          local comma = find(text, ',', at, true)
          local part = sub(text, at, (comma or 0) - 1)
          local value = 0 -- Number('') is 0 in JS
          if part ~= '' then value = to_number(part) end
          if value == nil or value ~= floor(value) or value > MAX_SAFE or value < -MAX_SAFE then
            s = false
            break
          end
          n = n + 1
          s[n] = value
          if not comma then break end
          at = comma + 1
        end
      end
    end
    state[key] = s
  end
end

local out, o = {now, false, false, false, false}, 1 -- flat reply, sized for one one-rule decision
local rules
local k = 0
for a = 1, nargs do
  local entry = ARGV[a]
  local cost, mode = to_number(entry), 'consume'
  local c = 0
  if not cost then
    c = byte(entry)
    if c == 112 then mode = 'peek' elseif c == 114 then mode = 'refund' end
    cost = to_number(sub(entry, 2))
  end
  if c == 35 then -- '#': a spec
    rules = rules_of(entry)
    if not rules then return redis.error_reply('sluice: malformed rule spec ' .. entry) end
  elseif c == 64 then -- '@': the client's clock
    if not client_clock or not cost then return redis.error_reply('sluice: malformed clock ' .. entry) end
    now = cost
  else -- a decision: its cost, prefixed by p (peek) or r (refund)
    if not cost or (c ~= 0 and mode == 'consume') then return redis.error_reply('sluice: malformed decision ' .. entry) end
    if not rules then return redis.error_reply('sluice: a decision before any spec') end
    local n = #rules
    if k + n > nkeys then return redis.error_reply('sluice: fewer KEYS than rules') end
    local writes = cost > 0 and mode ~= 'peek'

    if n == 1 then
      local rule, key = rules[1], KEYS[k + 1]
      local allowed, next_state, left, reset, retry, life = rule[1](state[key], now, cost, mode, rule[2], rule[3], rule[4])
      if writes and (allowed or mode == 'refund') then
        final[key] = next_state
        final_ttl[key] = life
        -- What a later read would decode: nothing for a deleted key or an empty log (stored as '').
        if life > 0 and #next_state > 0 then state[key] = next_state else state[key] = false end
      end
      out[o + 1] = allowed and 1 or 0
      out[o + 2] = left
      out[o + 3] = reset
      out[o + 4] = retry
      o = o + 4
    else
      if not prior then prior, ok, nxt, remaining, reset_at, retry_at, ttl = {}, {}, {}, {}, {}, {}, {} end
      local allowed = true
      for i = 1, n do
        local rule = rules[i]
        local s = state[KEYS[k + i]]
        prior[i] = s
        ok[i], nxt[i], remaining[i], reset_at[i], retry_at[i], ttl[i] = rule[1](s, now, cost, mode, rule[2], rule[3], rule[4])
        if not ok[i] then allowed = false end
      end
      -- All-or-nothing: when one rule denies a consume, the rules that would have consumed report their state untouched.
      if not allowed and mode == 'consume' then
        for i = 1, n do
          if ok[i] then
            local rule = rules[i]
            ok[i], nxt[i], remaining[i], reset_at[i], retry_at[i], ttl[i] = rule[1](prior[i], now, cost, 'peek', rule[2], rule[3], rule[4])
          end
        end
      end
      if writes and (allowed or mode == 'refund') then
        for i = 1, n do
          local key = KEYS[k + i]
          final[key] = nxt[i]
          final_ttl[key] = ttl[i]
          if ttl[i] > 0 and #nxt[i] > 0 then state[key] = nxt[i] else state[key] = false end
        end
      end
      for i = 1, n do
        out[o + 1] = ok[i] and 1 or 0
        out[o + 2] = remaining[i]
        out[o + 3] = reset_at[i]
        out[o + 4] = retry_at[i]
        o = o + 4
      end
    end
    k = k + n
  end
end
if k ~= nkeys then return redis.error_reply('sluice: more KEYS than rules') end

-- No key is ever written without an expiry; state already worthless (ttl <= 0) is deleted instead. (The order of
-- the writes is irrelevant: the keys are distinct and the script is atomic.)
local doomed, z
for key, life in pairs(final_ttl) do
  if life > 0 then
    redis.call('SET', key, encode(final[key]), 'PX', life + slack)
  else
    if not doomed then doomed, z = {}, 0 end
    z = z + 1
    doomed[z] = key
  end
end
if doomed then redis.call('DEL', unpack(doomed)) end
for i = 1, nkeys do
  local key = KEYS[i]
  state[key], final[key], final_ttl[key] = nil, nil, nil
end
dirty = false
return out
`;

export const LIMIT_SCRIPT: string = `local ${LOCALS} = ${GLOBALS}
${PRELUDE}
${BODY}`;

/** Extra key lifetime, in Redis real time, with `clock: 'client'` (see above); with Redis TIME keys live exactly ttlMs. */
export const CLIENT_CLOCK_EXPIRY_SLACK_MS = 1000;

/** SHA-1 of LIMIT_SCRIPT, for EVALSHA. A test recomputes it; update both together. */
export const LIMIT_SCRIPT_SHA1 = 'e448f30fc8139bba18869ddb6c988c034424930b';

/** The Function library's version: the script's digest, so app servers running different versions never collide. */
const VERSION = LIMIT_SCRIPT_SHA1.slice(0, 12);

/** The Redis Function that runs LIMIT_SCRIPT's body (FCALL <name> numkeys KEYS... ARGV...). */
export const LIMIT_FUNCTION = `sluice_limit_${VERSION}`;

/** The Redis 7 Function library defining LIMIT_FUNCTION (FUNCTION LOAD). */
export const LIMIT_LIBRARY: string = `#!lua name=sluice_${VERSION}
local ${LOCALS}
local function bind()
  ${LOCALS} = ${GLOBALS}
end
${PRELUDE}
local function limit(KEYS, ARGV)
if not floor then bind() end
${BODY}end
redis.register_function('${LIMIT_FUNCTION}', limit)
`;
