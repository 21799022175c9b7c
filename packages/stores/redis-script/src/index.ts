/**
 * `@sluice/redis-script`: the Lua executor both Redis-protocol stores run (`@sluice/redis` on ioredis,
 * `@sluice/upstash` over REST), its argument/reply codec and the batcher that coalesces decisions into script
 * calls, and the concurrency-lease script. Free of any Redis client and of Node built-ins, so it runs on the edge too.
 */
export { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_FUNCTION, LIMIT_LIBRARY, LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1 } from './limit-script.js';
export { appendDecision, encodeCall, newCall, parseCallReply, luaRuleArgument, specEntry } from './arguments.js';
export type { ScriptCallArguments } from './arguments.js';
export { LimitBatcher } from './batcher.js';
export { jsonStringBytes } from './json-size.js';
export type { LimitBatcherOptions, ScriptCall } from './batcher.js';
export { LEASE_SCRIPT, LEASE_SCRIPT_SHA1, LeaseBatcher, leaseCall, parseLeaseReplies, parseLeaseReply, runLease } from './lease-script.js';
export type { LeaseBatcherOptions, LeaseCallArguments } from './lease-script.js';
export { isNoScript, runScript } from './run-script.js';
export {
  ANALYTICS_PUBLISH_SCRIPT,
  ANALYTICS_READ_SCRIPT,
  DENY_CHANGE_SCRIPT,
  DENY_READ_SCRIPT,
  REPLACE_CONFIG_SCRIPT,
} from './config-script.js';
export { denyChannel, denyKeys, scriptDenySource } from './deny-script.js';
export type { EvaluateScript, ScriptDenySourceOptions } from './deny-script.js';
export type { ScriptCommands } from './run-script.js';
export { scriptStoreOptions } from './store-options.js';
export type { ScriptStoreOptions } from './store-options.js';
