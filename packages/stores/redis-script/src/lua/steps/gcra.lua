--- GCRA (`gcra`: limit, periodMs, burst): core's gcraStep (packages/core/src/algorithms/gcra.ts), line by
--- line. Assigns the step to `f` inside step_for.
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
