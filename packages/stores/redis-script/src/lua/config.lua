-- Runtime configuration's compare and set (core's ConfigSource.replace), for the config sources of both
-- Redis-protocol stores. KEYS[1]: the document's key; ARGV[1]: the revision the writer read (0: none stored);
-- ARGV[2]: the new document. Writes and announces it only if the stored revision is still ARGV[1]: 1 if it did,
-- 0 if another writer got in between, -1 if the stored value is not a document with a numeric revision.
-- One script, so no other write falls between the check and the SET; PUBLISH takes no key, so it runs on a
-- Cluster too.
local current = redis.call('GET', KEYS[1])
local revision = 0
if current then
  local ok, document = pcall(cjson.decode, current)
  if not ok or type(document) ~= 'table' or type(document.revision) ~= 'number' then return -1 end
  revision = document.revision
end
if revision ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('PUBLISH', KEYS[1], 'changed')
return 1
