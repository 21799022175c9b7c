export { rateLimit } from './rate-limit.js';
export type { ExpressRateLimitOptions, ExpressRequest, RateLimitInfo, RateLimitMiddleware } from './rate-limit.js';
export type { HandleResult, HttpLimitOptions, LimiterEntry, Outcome } from '@sluice/http';
