--- Fixed window (spec code `fw`, parameters limit, windowMs, offsetMs): core's fixedWindowStep
--- (packages/core/src/algorithms/fixed-window.ts), line by line. Assigns the step to `f` inside step_for.
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
