export { rateLimit } from './rate-limit.js';
export { matchDenyList } from '@sluice/http';
export { trafficStack } from './traffic-stack.js';
export type { StackLayer, TrafficStackInfo, TrafficStackOptions } from './traffic-stack.js';
export type { ExpressRateLimitOptions, ExpressRequest, RateLimitInfo, RateLimitMiddleware } from './rate-limit.js';
export type { HandleResult, HttpLimitOptions, LimiterEntry, Outcome } from '@sluice/http';
