import { analyticsReadScript, analyticsScript, configScript, denyChangeScript, denyReadScript } from 'virtual:sluice-lua';

/**
 * The compare and set of runtime configuration writers (core's ConfigSource.replace) that both Redis-protocol
 * stores' config sources run with EVAL: src/lua/config.lua, linted with the other scripts.
 */
export const REPLACE_CONFIG_SCRIPT: string = configScript;

/**
 * Fleet analytics' publish (core's AnalyticsStore.publish) in one EVAL, for the Upstash store: src/lua/analytics.lua,
 * linted with the other scripts. Its KEYS and ARGV are described at the top of that file.
 */
export const ANALYTICS_PUBLISH_SCRIPT: string = analyticsScript;

/** Fleet analytics' reads (`read` and `names`), each in one EVAL, for the Upstash store: src/lua/analytics-read.lua. */
export const ANALYTICS_READ_SCRIPT: string = analyticsReadScript;

/**
 * One change to a deny list (core's DenyListSource.change) in one EVAL, for both Redis-protocol stores' config
 * sources: src/lua/deny-change.lua, whose KEYS and ARGV are described at the top of that file (deny-script.ts
 * builds them).
 */
export const DENY_CHANGE_SCRIPT: string = denyChangeScript;

/** A deny list's reads (readChanges and readPage), each in one EVAL: src/lua/deny-read.lua. */
export const DENY_READ_SCRIPT: string = denyReadScript;
