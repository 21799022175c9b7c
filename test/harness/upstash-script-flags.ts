/**
 * Upstash accepts script flags that Redis 7 refuses. `allow-key-locking` (Upstash's key-based locking: the
 * script locks only the keys in KEYS instead of the whole database) is what @upstash/ratelimit puts in every
 * shebang, `#!lua flags=allow-key-locking`, and plain Redis answers "Unexpected flag in script shebang".
 *
 * The fixture rewrites the shebang before Redis sees it, and keeps the client's view intact: SHA1 digests are
 * those of the text the client sent (what SCRIPT LOAD returns and EVALSHA names on Upstash), mapped to the
 * digest of the rewritten text that Redis actually caches.
 *
 * It also enforces the flag's rule, as Upstash does: a flagged script may touch only keys passed in KEYS. Redis 7
 * checks that only in cluster mode (and only for hash slots), so the rewritten script starts with KEY_LOCKING_GUARD,
 * a local `redis` that shadows the global one for the whole chunk: its `call` and `pcall` find the command's keys
 * and refuse any key not in KEYS, `call` by raising the error and `pcall` by returning it, as Redis does with its
 * own errors. The keys are read from a table for the commands scripts use (SINGLE_KEY, EVERY_ARGUMENT, KEYLESS,
 * Redis's key positions for them) and asked of Redis (COMMAND GETKEYS) for any other: no extra Redis command for
 * the common ones, so `pnpm bench upstash`'s counts from INFO commandstats stay those of the scripts themselves.
 * The guard shares the script's first line, so a Lua error keeps the line number of the text sent; an error a
 * command raises through `redis.call` is reported on that first line, the guard's.
 */
import { createHash } from 'node:crypto';

/** Flags Upstash understands and Redis 7 does not. Other unknown flags reach Redis and are refused, as upstream. */
export const UPSTASH_ONLY_FLAGS: ReadonlySet<string> = new Set(['allow-key-locking']);

/**
 * The error a flagged script gets for a key not in KEYS. Upstash's wording as users report it (its documentation
 * states the rule, not the text); Redis appends the script and line as it does to every error a script raises.
 */
export const UNDECLARED_KEY_ERROR = "ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set";

/** Commands whose one key is their first argument. */
const SINGLE_KEY = (
  'get set setnx setex psetex getset getdel getex incr incrby incrbyfloat decr decrby append strlen getrange setrange ' +
  'expire pexpire expireat pexpireat ttl pttl persist type ' +
  'hget hset hsetnx hmset hmget hgetall hdel hexists hincrby hincrbyfloat hlen hkeys hvals ' +
  'zadd zrem zcard zscore zmscore zincrby zrange zrangebyscore zrevrange zrevrangebyscore zremrangebyscore zremrangebyrank ' +
  'zrank zrevrank zcount lpush rpush lpop rpop llen lrange lindex lset ltrim sadd srem smembers sismember scard'
).split(' ');
/** Commands every argument of which is a key. */
const EVERY_ARGUMENT = ['mget', 'del', 'unlink', 'exists', 'touch'];
/** Commands without keys (PUBLISH's channel is not one). */
const KEYLESS = ['time', 'publish', 'ping', 'echo'];

const luaSet = (names: readonly string[]) => `{ ${names.map((name) => `${name} = true`).join(', ')} }`;

/** One line of Lua (see above): `redis` for the rest of the chunk, refusing keys not in KEYS. */
const KEY_LOCKING_GUARD =
  'local redis = (function(real) ' +
  'local declared = {} for _, key in ipairs(KEYS) do declared[key] = true end ' +
  `local single, every, keyless = ${luaSet(SINGLE_KEY)}, ${luaSet(EVERY_ARGUMENT)}, ${luaSet(KEYLESS)} ` +
  'local function undeclared(command, ...) ' +
  'local name = string.lower(tostring(command)) local keys = {} if keyless[name] then return false end ' +
  'if single[name] then keys = { (...) } elseif every[name] then keys = { ... } ' +
  "else keys = real.pcall('COMMAND', 'GETKEYS', command, ...) " +
  // An error means the command takes no key or is malformed, which Redis then refuses itself.
  "if type(keys) ~= 'table' or keys.err ~= nil then return false end end " +
  'for _, key in ipairs(keys) do if not declared[tostring(key)] then return true end end ' +
  'return false end ' +
  `local refusal = ${JSON.stringify(UNDECLARED_KEY_ERROR)} ` +
  'return setmetatable({ ' +
  'call = function(...) if undeclared(...) then error({ err = refusal }) end return real.call(...) end, ' +
  'pcall = function(...) if undeclared(...) then return real.error_reply(refusal) end return real.pcall(...) end ' +
  '}, { __index = real }) end)(redis); ';

export function sha1Hex(text: string | Buffer): string {
  return createHash('sha1').update(text).digest('hex');
}

/** The script as Redis must receive it: same body, line for line, with Upstash-only flags dropped from the shebang. */
export function translateScript(script: string): string {
  if (!script.startsWith('#!')) return script;
  const newline = script.indexOf('\n');
  const shebang = newline < 0 ? script : script.slice(0, newline);
  const rest = newline < 0 ? '' : script.slice(newline);
  const [engine, ...params] = shebang.trim().split(/\s+/);
  let changed = false;
  let keyLocking = false;
  const kept = params.map((param) => {
    if (!param.startsWith('flags=')) return param;
    const flags = param
      .slice('flags='.length)
      .split(',')
      .filter((flag) => flag !== '');
    const redisFlags = flags.filter((flag) => !UPSTASH_ONLY_FLAGS.has(flag));
    keyLocking ||= flags.includes('allow-key-locking');
    if (redisFlags.length === flags.length) return param;
    changed = true;
    return redisFlags.length === 0 ? '' : `flags=${redisFlags.join(',')}`;
  });
  if (!changed) return script;
  const redisShebang = [engine, ...kept.filter((param) => param !== '')].join(' ');
  return keyLocking ? `${redisShebang}\n${KEY_LOCKING_GUARD}${rest.slice(1)}` : redisShebang + rest;
}

/**
 * Digest bookkeeping shared by EVAL, EVALSHA, SCRIPT LOAD and SCRIPT EXISTS: client digest -> Redis digest, for
 * the scripts whose text the fixture rewrote. Scripts it did not rewrite have the same digest on both sides.
 */
export class ScriptDigests {
  private readonly toRedis = new Map<string, string>();

  /** Rewrites a script body and remembers its digests; returns the text for Redis and the client's digest. */
  admit(script: string): { redisScript: string; clientSha: string } {
    const redisScript = translateScript(script);
    const clientSha = sha1Hex(script);
    if (redisScript !== script) this.toRedis.set(clientSha, sha1Hex(redisScript));
    return { redisScript, clientSha };
  }

  /** The digest Redis knows for a digest the client sent (case-insensitive, as Redis is). */
  redisSha(clientSha: string): string {
    const lower = clientSha.toLowerCase();
    return this.toRedis.get(lower) ?? clientSha;
  }

  clear(): void {
    this.toRedis.clear();
  }
}
