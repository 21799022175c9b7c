--- Sliding window log (`swl`: limit, windowMs): core's slidingWindowLogStep
--- (packages/core/src/algorithms/sliding-window-log.ts), line by line. Assigns the step to `f` inside step_for.
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
