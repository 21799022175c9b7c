export { rateLimit } from './rate-limit.js';
export { matchDenyList } from '@sluice/http';
export { trafficStack } from './traffic-stack.js';
export type { HonoTrafficStackOptions, TrafficStackInfo } from './traffic-stack.js';
export type { DecisionEvent, HonoRateLimitOptions, RateLimitInfo, RateLimitVariables } from './options.js';
export type { HandleResult, LimiterEntry, Outcome } from '@sluice/http';
export type { StackLayer } from '@sluice/http/adapter';
