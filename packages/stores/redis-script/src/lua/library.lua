#!lua name=sluice_@VERSION@
local floor, min, max, to_number, find, sub, byte, match, format, concat
local function bind()
  floor, min, max, to_number, find, sub, byte, match, format, concat = math.floor, math.min, math.max, tonumber, string.find, string.sub, string.byte, string.match, string.format, table.concat
end
-- #include prelude.lua

local function limit(KEYS, ARGV)
if not floor then bind() end
-- #include driver.lua
end
redis.register_function('sluice_limit_@VERSION@', limit)
