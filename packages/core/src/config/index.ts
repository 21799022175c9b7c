// `@sluice/core/config`: runtime configuration kept in the shared store. The functions that read and write a
// limiter's document, `watchConfig`, which applies it to a running limiter, `createAutoDeny`, which adds identities that
// keep being refused to the deny list, and `ConfigSource`, the contract a store implements to hold it.
export { createAutoDeny } from './auto-deny.js';
export type { AutoDeny, AutoDenyOptions } from './auto-deny.js';
export { parseLimiterConfig } from './document.js';
export type { LimiterConfig } from './document.js';
export type { DenyEntry } from '../deny/entries.js';
export type { ConfigSource, Unsubscribe } from './source.js';
export { DENY_CHANGE_MAX, DENY_EXPIRE_MAX, DENY_LOG_LENGTH } from '../deny/source.js';
export type { DenyChangeResult, DenyChangesRead, DenyListChange, DenyListSource, DenyListVersion, DenyPage } from '../deny/source.js';
export { changeText, entryText, newEpoch, readChangeText, stampChangeText } from '../deny/change.js';
export type { DenyChangeRecord } from '../deny/change.js';
export { denyChangesSince, denyListVersion, liveDenyList } from '../deny/lineage.js';
export type { DenyLineage, DenyListStep, LiveDenyLineage } from '../deny/lineage.js';
export { addDenyEntries, addDenyEntry, removeDenyEntries, removeDenyEntry, replaceDenyEntries } from './deny-writers.js';
export { readDenyList } from './deny-read.js';
export type { AddDenyEntryOptions, DenyWriteResult } from './deny-writers.js';
export {
  deleteLimiterConfig,
  readLimiterConfig,
  removeQuota,
  setLimiterMode,
  setLimiterRules,
  setDenyListMode,
  setQuota,
  writeLimiterConfig,
} from './writers.js';
export type { LimiterConfigChanges, ReadLimiterConfigOptions, RulesInput } from './writers.js';
export { watchConfig } from './watch-config.js';
export type { ConfigWarning, ConfigWatcher, WatchConfigOptions } from './watch-config.js';
