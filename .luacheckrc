-- luacheck settings for the Redis Lua executor (packages/stores/redis-script/src/lua). `pnpm lint` runs
-- scripts/luacheck.mjs, which lints the script and the Function library as Redis runs them (assembled from the
-- .lua files) and reports each warning at its line in the .lua file it came from.
std = 'lua51' -- Redis embeds Lua 5.1
-- What Redis gives a script besides Lua 5.1's standard library.
read_globals = { 'redis', 'KEYS', 'ARGV', 'cjson', 'cmsgpack', 'bit', 'struct' }
-- The longest line binds the standard functions to locals (script.lua, library.lua); code stays within 140.
max_line_length = 200
max_code_line_length = 200
max_comment_line_length = 140
ignore = {
  -- `dirty` guards the per-call tables that a Redis Function keeps across calls (library.lua); the EVAL script
  -- makes new ones every call, so there the flag is written and never read.
  '311/dirty',
}
