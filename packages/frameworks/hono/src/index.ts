export { rateLimit } from './rate-limit.js';
export type { DecisionEvent, HonoRateLimitOptions, RateLimitInfo, RateLimitVariables } from './options.js';
export type { HandleResult, LimiterEntry, Outcome } from '@sluice/http';
