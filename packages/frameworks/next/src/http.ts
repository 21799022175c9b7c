// Everything this package takes from @sluice/http comes in through this one file. The root lint config's ban on
// Node built-ins lists `http` as a path pattern, which also matches `@sluice/http` (itself edge-safe and checked
// by the same rules); the one exemption below is for that false match only. Remove it when the pattern is exact.
// eslint-disable-next-line no-restricted-imports -- '@sluice/http' is not node:http (see above)
export { applyHeaders, createHandler, type ErrorEvent, type HandleResult, type HttpLimitOptions, type HttpRequest, type LimitedEvent, type LimiterEntry, type Outcome } from '@sluice/http';
