/**
 * `@sluice/redis/scripts`: the Lua executor and its argument/reply codec, free of ioredis and of Node built-ins,
 * so any Redis-protocol store (the Upstash REST store on the edge included) runs the exact same script.
 */
export { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1 } from './limit-script.js';
export { HEADER_LENGTH, RULE_STRIDE, parseReply, ruleArguments, scriptArguments, scriptKeys } from './arguments.js';
