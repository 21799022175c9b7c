// Everything this package takes from @sluice/http comes in through this one file.
export { applyHeaders, checkOptionsObject, createHandler, PROBLEM_CONTENT_TYPE, problemFor, throttledWarning, type RefusalKind, type ErrorEvent, type HandleResult, type HttpLimitOptions, type HttpRequest, type LimitedEvent, type LimiterEntry, type Outcome } from '@sluice/http';
