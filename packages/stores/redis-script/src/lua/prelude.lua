--- What outlives a call in the Redis Function (and is rebuilt per call by EVAL): core's integer helpers, the
--- step cache (`-- #include steps` becomes one arm per steps/*.lua), the spec parser, the state encoder and the
--- per-call tables. Uses the standard functions script.lua / library.lua bind to locals.
local NEVER = -1
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
  -- #include steps
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
    rules[n] = {step, to_number(a), to_number(b), to_number(c), code}
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

-- core's store/operations.ts (take and reserve), over a decision's rules and the states read for them (false: none).

-- stateTime(): the time a rule's state was last moved to (a reservation never starts before it), by spec code:
-- the index of that time in the state, 0 for GCRA (its TAT orders requests by itself).
local STATE_TIME = {fw = 1, swc = 1, tbs = 2, tbi = 2, lb = 2}
local function state_time(rule, s)
  local code = rule[5]
  if code == 'swl' then
    local n = #s
    if n >= 2 then return s[n - 1] end
    return 0
  end
  if code == 'gcra' then return 0 end
  return s[STATE_TIME[code]] or 0
end

local function passes(rules, prior, cost, at)
  for i = 1, #rules do
    local rule = rules[i]
    if not rule[1](prior[i], at, cost, 'peek', rule[2], rule[3], rule[4]) then return false end
  end
  return true
end

-- firstPassing(): the first instant >= from at which the cost passes every rule, or NEVER if none before
-- SEARCH_LIMIT_MS (2^52): a doubling search, then a bisection over whole milliseconds, exactly as core's.
local SEARCH_LIMIT_MS = 4503599627370496
local function first_passing(rules, prior, cost, from)
  if passes(rules, prior, cost, from) then return from end
  local failing, stride = from, 1
  local passing = from + stride
  while not passes(rules, prior, cost, passing) do
    failing = passing
    stride = stride * 2
    if failing + stride > SEARCH_LIMIT_MS then return NEVER end
    passing = failing + stride
  end
  while passing - failing > 1 do
    local middle = failing + floor((passing - failing) / 2)
    if passes(rules, prior, cost, middle) then passing = middle else failing = middle end
  end
  return passing
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
