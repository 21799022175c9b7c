--- Token bucket, refill at interval boundaries (`tbi`: capacity, refillRate, intervalMs): core's tokenBucketStep
--- with refill 'interval' (packages/core/src/algorithms/token-bucket.ts). Assigns the step to `f` inside step_for.
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
