/** Served at build time by build/lua.mjs (tsup and vitest plugins): the Lua of src/lua, assembled. */
declare module 'virtual:sluice-lua' {
  /** src/lua/script.lua with its includes: the EVAL script. */
  export const script: string;
  /** SHA-1 of `script`, hex. */
  export const sha1: string;
  /** `sluice_limit_` + the first 12 hex digits of `sha1`. */
  export const functionName: string;
  /** src/lua/library.lua with its includes: the Redis Function library defining `functionName`. */
  export const library: string;
  /** src/lua/lease.lua assembled: the concurrency-lease script (EVAL / EVALSHA). */
  export const leaseScript: string;
  /** SHA-1 of `leaseScript`, hex. */
  export const leaseSha1: string;
  /** src/lua/config.lua: runtime configuration's compare and set (EVAL). */
  export const configScript: string;
  /** src/lua/analytics.lua: fleet analytics' publish (EVAL). */
  export const analyticsScript: string;
  /** src/lua/analytics-read.lua: fleet analytics' reads (EVAL). */
  export const analyticsReadScript: string;
  /** src/lua/deny-change.lua: one change to a deny list (EVAL). */
  export const denyChangeScript: string;
  /** src/lua/deny-read.lua: a deny list's changes and pages (EVAL). */
  export const denyReadScript: string;
}
