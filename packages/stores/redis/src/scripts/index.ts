/**
 * `@sluice/redis/scripts`: the Lua executor, its argument/reply codec and the batcher, re-exported from
 * `@sluice/redis-script`, the package that owns them (kept so existing imports of this subpath still work).
 */
export { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_FUNCTION, LIMIT_LIBRARY, LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1 } from '@sluice/redis-script';
export { appendDecision, encodeCall, newCall, parseCallReply, luaRuleArgument, specEntry } from '@sluice/redis-script';
export type { ScriptCallArguments } from '@sluice/redis-script';
export { LimitBatcher } from '@sluice/redis-script';
export type { LimitBatcherOptions, ScriptCall } from '@sluice/redis-script';
