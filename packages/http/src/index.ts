export { createHandler } from './handler.js';
export { checkOptionsObject } from './compile-options.js';
export type { Handler, HandleResult, LimiterResult, Outcome } from './handler.js';
export type {
  DenyContext,
  DenyResponse,
  ErrorEvent,
  HttpLimitOptions,
  IdentityValue,
  LimitedEvent,
  LimiterEntry,
  MissingIdentityPolicy,
  ShadowBanOptions,
} from './options.js';
export { HTTP_OPTION_NAMES } from './options.js';

export { clientIpResolver, PLATFORM_HEADERS } from './client-ip.js';
export type { AddressSource, ClientIpOptions, ClientIpResult, Platform } from './client-ip.js';
// A resolved client's `address` is one; the functions that parse and format it are on `@sluice/http/ip`.
export type { IpAddress } from './ip-address.js';

export { ceilSeconds, HEADER_STYLES, nodeHeaderTarget, rateLimitFields, sfString, writeHeaders } from './header-fields.js';
export type { HeaderField, HeaderStyle, HeaderTarget, LegacyReset, PolicyReport, RateLimitFieldsOptions } from './header-fields.js';
export { PROBLEM_CONTENT_TYPE, PROBLEM_TYPES, REFUSAL_STATUS, problemFor } from './problem.js';
export type { ProblemDetails, ProblemInput, RefusalKind } from './problem.js';
export { addressLost, readHeader } from './request.js';
export type { HeaderBag, HttpRequest, SocketLike } from './request.js';
export { applyHeaders, headersTarget, toResponse } from './web.js';
export { throttledWarning } from './report.js';
export { BackgroundHooks } from './background.js';
export type { BackgroundHooksOptions, WaitUntil } from './background.js';
export { checkStackLayers, heldUntilEnd, releasingBody, runStackLayers, stackRefusal } from './stack.js';
export type { EndingResponse, StackLayer, StackLayers, StackOutcome, StackRefusal } from './stack.js';
