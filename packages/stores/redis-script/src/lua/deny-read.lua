-- A deny list's reads (core's DenyListSource.readChanges and readPage), each in one script, so that where the list is
-- and what is read come from the same moment. KEYS as in deny-change.lua: the entries, where the list is, the log.
-- ARGV[1] 'changes': ARGV[2] the epoch the reader holds ('' for none), ARGV[3] its version. Returns nothing when no
-- list is stored; else the epoch, the version and, when the reader is of this epoch, not ahead and the log still
-- holds every change after its version, the mark 'log' then those changes' texts, oldest first.
-- ARGV[1] 'page': ARGV[2] the HSCAN cursor, ARGV[3] its COUNT. Returns nothing when no list is stored; else the
-- epoch, the version, the next cursor and the entry texts of the page.
-- Every string returned starts with REPLY_MARK, which no JSON text starts with: a client that parses replies as
-- JSON (@upstash/redis does by default) hands each back as the text it is (deny-script.ts drops the mark).
local REPLY_MARK = '~'

local epoch = redis.call('HGET', KEYS[2], 'epoch')
if not epoch then return {} end
local version = tonumber(redis.call('HGET', KEYS[2], 'version')) or 0
local reply = { REPLY_MARK .. epoch, REPLY_MARK .. string.format('%d', version) }

if ARGV[1] == 'changes' then
  local since = tonumber(ARGV[3])
  if ARGV[2] ~= epoch or since == nil or since > version then return reply end
  local behind = version - since
  if behind > redis.call('LLEN', KEYS[3]) then return reply end
  reply[3] = REPLY_MARK .. 'log'
  if behind > 0 then
    local newest_first = redis.call('LRANGE', KEYS[3], 0, behind - 1)
    for i = #newest_first, 1, -1 do reply[#reply + 1] = REPLY_MARK .. newest_first[i] end
  end
  return reply
end

local page = redis.call('HSCAN', KEYS[1], ARGV[2], 'COUNT', ARGV[3])
reply[3] = REPLY_MARK .. page[1]
for i = 2, #page[2], 2 do reply[#reply + 1] = REPLY_MARK .. page[2][i] end
return reply
