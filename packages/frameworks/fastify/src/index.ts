export { RateLimitError, rateLimitPlugin } from './plugin.js';
export { matchDenyList } from '@sluice/http';
export { trafficStackPlugin } from './traffic-stack.js';
export type { FastifyStackLayer, FastifyTrafficStackOptions } from './traffic-stack.js';
export type { FastifyRateLimitOptions } from './plugin.js';
export type { HookStage, RouteRateLimitOptions } from './route-plans.js';
export type { HandleResult, HttpLimitOptions, LimiterEntry, Outcome } from '@sluice/http';
