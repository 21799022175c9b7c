--- One call: core's evaluate() over KEYS and ARGV (see limit-script.ts for the protocol). The EVAL script runs
--- it as its chunk; the Function library wraps it in `limit(KEYS, ARGV)`.
local nkeys, nargs = #KEYS, #ARGV
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
  local c, max_wait = 0, 0
  if not cost then
    c = byte(entry)
    if c == 112 then mode = 'peek' elseif c == 114 then mode = 'refund' elseif c == 116 then mode = 'take' end
    if c == 118 then -- 'v' + cost + ',' + maxWaitMs: a reserve
      mode = 'reserve'
      local x, y = match(entry, '^v(%d+),(%d+)$')
      if x then cost, max_wait = to_number(x), to_number(y) end
    else
      cost = to_number(sub(entry, 2))
    end
  end
  if c == 35 then -- '#': a spec
    rules = rules_of(entry)
    if not rules then return redis.error_reply('sluice: malformed rule spec ' .. entry) end
  elseif c == 64 then -- '@': the client's clock
    if not client_clock or not cost then return redis.error_reply('sluice: malformed clock ' .. entry) end
    now = cost
  else -- a decision: its cost, prefixed by p (peek), r (refund), t (take) or v (reserve, with its maxWaitMs)
    if not cost or (c ~= 0 and mode == 'consume') then return redis.error_reply('sluice: malformed decision ' .. entry) end
    if not rules then return redis.error_reply('sluice: a decision before any spec') end
    local n = #rules
    if k + n > nkeys then return redis.error_reply('sluice: fewer KEYS than rules') end
    local writes = cost > 0 and mode ~= 'peek'

    local special = mode == 'take' or mode == 'reserve'
    if n == 1 and not special then
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
      -- The first pass: the step itself; for a take a peek of 0 (each rule's room), for a reserve a peek of the cost.
      local first_mode, first_cost = mode, cost
      if mode == 'take' then first_mode, first_cost = 'peek', 0 elseif mode == 'reserve' then first_mode = 'peek' end
      local allowed, room = true, cost
      for i = 1, n do
        local rule = rules[i]
        local s = state[KEYS[k + i]]
        prior[i] = s
        ok[i], nxt[i], remaining[i], reset_at[i], retry_at[i], ttl[i] = rule[1](s, now, first_cost, first_mode, rule[2], rule[3], rule[4])
        if not ok[i] then allowed = false end
        if remaining[i] < room then room = remaining[i] end
      end
      local extra
      if special then
        -- core's takeEvaluation / reserveEvaluation (store/operations.ts), in the same order. `extra` is the decision's granted
        -- (take) or startAt (reserve), sent after its rules; `at`, when set, is the instant every rule consumes
        -- `amount` and is written (a take that granted units, a reserve that booked).
        local at, amount = nil, cost
        extra = 0
        if mode == 'take' then
          local granted = max(0, room)
          if cost > 0 and granted == 0 then
            -- Nothing fits: the outcomes of a peek of one unit (retryAt: when one unit fits); nothing written.
            for i = 1, n do
              local rule = rules[i]
              ok[i], nxt[i], remaining[i], reset_at[i], retry_at[i], ttl[i] = rule[1](prior[i], now, 1, 'peek', rule[2], rule[3], rule[4])
            end
          elseif cost > 0 then
            at, amount, extra = now, granted, granted
          end
        elseif cost == 0 then
          extra = now
        else
          local lowest = now
          extra = nil
          for i = 1, n do
            if retry_at[i] == NEVER then
              extra = NEVER
              break
            end
            -- Every step's retryAt is a lower bound on when the cost fits, and a state's own time bounds the queue.
            if not ok[i] and retry_at[i] > lowest then lowest = retry_at[i] end
            if prior[i] then lowest = max(lowest, state_time(rules[i], prior[i])) end
          end
          if not extra then extra = first_passing(rules, prior, cost, lowest) end
          if extra ~= NEVER then
            if extra - now > max_wait then
              -- Too far away: nothing is booked, and every rule reports the start the request would have had.
              for i = 1, n do
                ok[i] = false
                retry_at[i] = extra
              end
            else
              at = extra
            end
          end
        end
        if at then
          for i = 1, n do
            local rule, key = rules[i], KEYS[k + i]
            ok[i], nxt[i], remaining[i], reset_at[i], retry_at[i], ttl[i] = rule[1](prior[i], at, amount, 'consume', rule[2], rule[3], rule[4])
            -- A step's ttl counts from its own time (at); the key's from the request's.
            local life = ttl[i] + (at - now)
            final[key] = nxt[i]
            final_ttl[key] = life
            if life > 0 and #nxt[i] > 0 then state[key] = nxt[i] else state[key] = false end
          end
        end
      else
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
      end
      for i = 1, n do
        out[o + 1] = ok[i] and 1 or 0
        out[o + 2] = remaining[i]
        out[o + 3] = reset_at[i]
        out[o + 4] = retry_at[i]
        o = o + 4
      end
      if extra then
        out[o + 1] = extra
        o = o + 1
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
