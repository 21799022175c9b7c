export { rateLimit } from './rate-limit.js';
export { matchDenyList } from './http.js';
export { withTrafficStack } from './traffic-stack.js';
export type { NextStackLayer, NextTrafficStackOptions } from './traffic-stack.js';
export type { NextRateLimit } from './rate-limit.js';
export { toNextResponse, withRateLimitHeaders } from './responses.js';
export type { DecisionEvent, NextRateLimitOptions, WaitUntilEvent } from './options.js';
export type { HandleResult, LimiterEntry, Outcome } from './http.js';
