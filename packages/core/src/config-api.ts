// `@sluice/core/config`: runtime configuration kept in the shared store. The functions that read and write a
// limiter's document, `watchConfig`, which applies it to a running limiter, and `ConfigSource`, the contract a
// store implements to hold it.
export { deleteLimiterConfig, parseLimiterConfig, readLimiterConfig, removeQuota, setConfigMode, setConfigRules, setQuota, writeLimiterConfig } from './runtime-config.js';
export type { ConfigSource, LimiterConfig, LimiterConfigChanges, RulesInput, Unsubscribe } from './runtime-config.js';
export { watchConfig } from './watch-config.js';
export type { ConfigWarning, ConfigWatcher, WatchConfigOptions } from './watch-config.js';
