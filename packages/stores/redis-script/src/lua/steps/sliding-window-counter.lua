--- Sliding window counter (`swc`: limit, windowMs): core's slidingWindowCounterStep
--- (packages/core/src/algorithms/sliding-window-counter.ts), line by line. Assigns the step to `f` inside step_for.
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
