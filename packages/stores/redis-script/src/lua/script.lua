local floor, min, max, to_number, find, sub, byte, match, format, concat = math.floor, math.min, math.max, tonumber, string.find, string.sub, string.byte, string.match, string.format, table.concat
-- #include prelude.lua

-- #include driver.lua
