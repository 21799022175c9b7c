--- Token bucket, smooth refill (`tbs`: capacity, refillRate, intervalMs): core's tokenBucketStep with
--- refill 'smooth' (packages/core/src/algorithms/token-bucket.ts). Assigns the step to `f` inside step_for.
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
