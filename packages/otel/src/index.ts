export { sluiceMetrics, METRICS, DURATION_BUCKETS } from './sluice-metrics.js';
export type { SluiceMetrics, SluiceMetricsOptions } from './sluice-metrics.js';
export { decisionOutcome } from './outcome.js';
export type { ComponentEvent, DecisionOutcome, ObservedEvent } from './outcome.js';
