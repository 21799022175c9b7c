--- Leaky bucket (`lb`: capacity, leakRate, intervalMs): core's leakyBucketStep
--- (packages/core/src/algorithms/leaky-bucket.ts), line by line. Assigns the step to `f` inside step_for.
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
