// `@sluice/http/fetch`: outbound calls. A fetch that waits for its slot of a limiter before each request to a third
// party and follows what the third party's RateLimit and Retry-After headers say (pushing the shared queue back,
// learning its limit alone or as a fleet), and the rule for that limiter, written as the third party states its
// limit. An adapter handles inbound requests and needs none of it, so it is apart from the root export and no
// adapter bundle carries it.
export { createThrottledFetch, pushBack } from './throttled-fetch.js';
export type { FetchLike, ResponseLike, SharedLearnOptions, ThrottledFetchOptions, UrlLike } from './throttled-fetch.js';
export { thirdPartyLimit } from './third-party-limit.js';
export type { ThirdPartyLimitOptions } from './third-party-limit.js';
