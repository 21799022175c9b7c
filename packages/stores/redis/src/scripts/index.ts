/**
 * `@sluice/redis/scripts`: the Lua executor, its argument/reply codec and the batcher that coalesces decisions
 * into script calls, free of ioredis and of Node built-ins, so any Redis-protocol store (the Upstash REST store on
 * the edge included) runs the exact same script the same way.
 */
export { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_FUNCTION, LIMIT_LIBRARY, LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1 } from './limit-script.js';
export { appendDecision, encodeCall, newCall, parseCallReply, ruleSpec, specEntry } from './arguments.js';
export type { ScriptCallArguments } from './arguments.js';
export { LimitBatcher } from './batcher.js';
export type { LimitBatcherOptions, ScriptCall } from './batcher.js';
