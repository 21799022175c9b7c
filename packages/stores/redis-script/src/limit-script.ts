/**
 * The Lua executor: one script call runs one decision, or a batch of decisions that were issued together, each
 * decision atomic and in order (the call as a whole is atomic on the server). Every rule of every decision is
 * read, stepped and written inside the call, so a decision (compound rules included) costs exactly one round
 * trip, and a batch of them still one.
 *
 * The Lua lives in src/lua as .lua files, linted by luacheck (`pnpm lint`) and assembled at build time by
 * build/lua.mjs, which also computes the SHA-1 (so nothing here is hard-coded): steps/*.lua, one per algorithm
 * step, each a line-by-line transcription of the JS step in @sluice/core (packages/core/src/algorithms);
 * prelude.lua, the shared helpers, the step cache and the spec parser; driver.lua, one call, which is
 * `evaluate()` from core's algorithms/rules.ts; script.lua and library.lua, the two ways the same text ships (below). Redis Lua numbers are IEEE doubles like JS numbers, and
 * every expression keeps the JS operation order, so `floor(a / b)` and friends round identically: the
 * differential tests in test/redis hold the two equal event by event, batched calls included. Change both or
 * neither.
 *
 * KEYS: the state keys of every rule of every decision, decision after decision
 * (`prefix:limiter:{identity}:ruleId`, one hash slot per identity). A key may appear in several decisions.
 * ARGV: a sequence of entries (see arguments.ts, which writes them):
 *   '@ms'          the client's clock for the decisions that follow; a call whose first entry is not '@' reads
 *                  Redis TIME once instead (the store clock) and may not carry '@' entries.
 *   '#code a b c'  the rules of the decisions that follow, one `code a b c` per rule joined by ' ' (three
 *                  integer parameters, unused ones 0). Decisions of one limiter share one spec entry.
 *   'cost'         a decision that consumes; 'p' + cost peeks, 'r' + cost refunds, 't' + cost takes, and
 *                  'v' + cost + ',' + maxWaitMs reserves (core's store/operations.ts: the same search and rounding, in the
 *                  same order). It takes the next KEYS, one per rule of the current spec.
 * Reply, flat, integers only (no fraction ever leaves the script): the store clock's now (0 with the client's
 * clock), then per decision and rule allowed (1/0), remaining, resetAt, retryAt (-1 = never), and after a take
 * or reserve decision's rules one more integer, its granted or its startAt (-1 = never). Whether the
 * decision as a whole is allowed is every rule's allowed: a rule that only looked, in an all-or-nothing denial,
 * reports allowed as the rule itself would have.
 *
 * Redis commands per call: one TIME (store clock only), one MGET of every key, one SET ... PX per key written
 * (only when a decision consumes, refunds, takes units or books a reservation), one DEL for state that is already worthless. Later decisions of a
 * call see earlier ones' writes through a Lua table, and each key is written once, with its last state, after
 * every decision was stepped: a call that fails on malformed input writes nothing. Algorithm steps are built on
 * first use and specs parsed once per call: defining every function on every call was a measurable cost.
 *
 * The same text ships two ways: LIMIT_SCRIPT for EVALSHA (everywhere: Redis 2.6+, Cluster, Upstash) and
 * LIMIT_LIBRARY, a Redis 7 Function library, for FCALL, where the helpers, the built steps and the parsed specs
 * outlive the call (the measured saving is about a quarter of a lone decision's time in Redis). Library code may
 * not touch the standard libraries while it loads, so the library binds its locals on its first call.
 * State: the rule's integers joined by ',' (core's encodeState), stored with PX = the step's ttlMs, or deleted
 * when ttlMs <= 0 (state that old is equivalent to none). No key is ever written without an expiry.
 * With the client's clock, Redis still expires keys by its own clock, which need not run with the client's (a slower
 * or frozen client clock, as in tests): keys then live CLIENT_CLOCK_EXPIRY_SLACK_MS longer, so a client clock that
 * falls behind Redis's by less than that never loses state early. A clock that stands still (a frozen test clock)
 * does lose it once ttl + slack has passed in Redis real time (the Redis README states the rule, and a test holds
 * it). Core's steps read expired state exactly as no state, so the extra life never changes a decision.
 */
import { functionName, library, script, sha1 } from 'virtual:sluice-lua';

/** The script for EVAL / EVALSHA: src/lua/script.lua assembled at build time. */
export const LIMIT_SCRIPT: string = script;

/** Extra key lifetime, in Redis real time, with `clock: 'client'` (see above); with Redis TIME keys live exactly ttlMs. */
export const CLIENT_CLOCK_EXPIRY_SLACK_MS = 1000;

/** SHA-1 of LIMIT_SCRIPT (hex), for EVALSHA: computed from the text at build time. */
export const LIMIT_SCRIPT_SHA1: string = sha1;

/**
 * The Redis Function that runs LIMIT_SCRIPT's body (FCALL <name> numkeys KEYS... ARGV...), versioned by the
 * script's digest (`sluice_limit_` + its first 12 hex digits), so app servers running different versions never
 * collide.
 */
export const LIMIT_FUNCTION: string = functionName;

/** The Redis 7 Function library defining LIMIT_FUNCTION (FUNCTION LOAD): src/lua/library.lua assembled. */
export const LIMIT_LIBRARY: string = library;
