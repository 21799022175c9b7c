// `@sluice/core/config`: runtime configuration kept in the shared store. The functions that read and write a
// limiter's document, `watchConfig`, which applies it to a running limiter, and `ConfigSource`, the contract a
// store implements to hold it.
export { parseLimiterConfig } from './config-document.js';
export type { LimiterConfig } from './config-document.js';
export type { ConfigSource, Unsubscribe } from './config-source.js';
export {
  deleteLimiterConfig,
  readLimiterConfig,
  removeQuota,
  setConfigMode,
  setConfigRules,
  setQuota,
  writeLimiterConfig,
} from './config-writers.js';
export type { LimiterConfigChanges, RulesInput } from './config-writers.js';
export { watchConfig } from './watch-config.js';
export type { ConfigWarning, ConfigWatcher, WatchConfigOptions } from './watch-config.js';
