/**
 * The small, obviously correct limiters a fleet simulation runs beside sluice, each a fixed window of `limit` per
 * `windowMs` on one Redis, judged by the same wall clock:
 * - `luaIncr`: one script call per decision that INCRs the identity's window counter (the plain store's peer).
 * - `referenceLease`: a lease tier in a page: one script call grants min(limit / 16, what is left) of the
 *   identity's current window; the units are spent from process memory (answered synchronously) until the window
 *   ends on this process's clock, counted from when the take was sent (so never after the window's real end); a
 *   window with nothing left is remembered as spent until it ends. The floor the tier's `lease` strategy must beat.
 * Both answer `{ allowed, degraded }`; a failed call answers a degraded refusal (fail closed).
 */

const INCR_SCRIPT = `
local window = math.floor(tonumber(ARGV[3]) / tonumber(ARGV[2]))
local key = KEYS[1] .. ':' .. window
local n = redis.call('INCR', key)
if n == 1 then redis.call('PEXPIRE', key, 2 * tonumber(ARGV[2])) end
if n <= tonumber(ARGV[1]) then return 1 end
return 0`;

const LEASE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windowMs = tonumber(ARGV[2])
local window = math.floor(now / windowMs)
local key = KEYS[1] .. ':' .. window
local used = tonumber(redis.call('GET', key) or '0')
local grant = math.min(tonumber(ARGV[3]), tonumber(ARGV[1]) - used)
local left = (window + 1) * windowMs - now
if grant <= 0 then return {0, left} end
if redis.call('INCRBY', key, grant) == grant then redis.call('PEXPIRE', key, 2 * windowMs) end
return {grant, left}`;

const REFUSED = { allowed: false, degraded: true };
const ALLOWED = { allowed: true, degraded: false };
const DENIED = { allowed: false, degraded: false };

/** @param {import('ioredis').Redis} redis */
export function luaIncr(redis, { limit, windowMs, prefix }) {
  redis.defineCommand('fleetIncr', { numberOfKeys: 1, lua: INCR_SCRIPT });
  return (id) =>
    redis.fleetIncr(`${prefix}:${id}`, limit, windowMs, Date.now()).then(
      (ok) => (ok === 1 ? ALLOWED : DENIED),
      () => REFUSED,
    );
}

/** @param {import('ioredis').Redis} redis */
export function referenceLease(redis, { limit, windowMs, prefix }) {
  redis.defineCommand('fleetLease', { numberOfKeys: 1, lua: LEASE_SCRIPT });
  const batch = Math.max(1, Math.floor(limit / 16));
  /** id -> { balance, until, spentUntil, fetching } (local clock) */
  const entries = new Map();
  const decide = (id) => {
    let entry = entries.get(id);
    if (entry === undefined) entries.set(id, (entry = { balance: 0, until: 0, spentUntil: 0, fetching: undefined }));
    const now = Date.now();
    if (entry.balance > 0 && now < entry.until) {
      entry.balance--;
      return ALLOWED;
    }
    if (now < entry.spentUntil) return DENIED;
    if (entry.fetching !== undefined) return entry.fetching.then((ok) => (ok ? decide(id) : REFUSED));
    const sentAt = now;
    const fetching = redis.fleetLease(`${prefix}:${id}`, limit, windowMs, batch).then(
      ([grant, left]) => {
        entry.fetching = undefined;
        if (grant > 0) {
          entry.balance = grant;
          entry.until = sentAt + left;
        } else {
          entry.spentUntil = sentAt + left;
        }
        return true;
      },
      () => {
        entry.fetching = undefined;
        return false;
      },
    );
    entry.fetching = fetching;
    return fetching.then((ok) => (ok ? decide(id) : REFUSED));
  };
  return decide;
}
