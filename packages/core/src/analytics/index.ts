// `@sluice/core/analytics`: fleet analytics. `createFleetAnalytics`, the observer that counts each limiter's decisions per
// second and publishes them, and `AnalyticsStore`, the contract of the store the fleet publishes into and a
// dashboard reads from (memoryAnalyticsStore, redisAnalyticsStore, sqliteAnalyticsStore).
export {
  ANALYTICS_OUTCOMES,
  DEFAULT_ANALYTICS_RETENTION,
  analyticsStoreSettings,
  DEFAULT_ANALYTICS_TOP_K,
  emptyAnalyticsCounts,
  topEntries,
} from './store.js';
export type { AnalyticsOutcome, AnalyticsSecond, AnalyticsStore, AnalyticsStoreOptions, AnalyticsStoreSettings } from './store.js';
export { createFleetAnalytics } from './fleet-analytics.js';
export type { FleetAnalytics, FleetAnalyticsOptions, FleetAnalyticsStats } from './fleet-analytics.js';
