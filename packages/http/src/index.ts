// The root export: what an application or a framework adapter calls (the handler, client identity, writing its
// header fields and its refusal, the traffic stack's layers, BackgroundHooks). How the fields and problem bodies are
// built stays inside. The subpaths: `@sluice/http/ip` (src/ip-api.ts), the address parsing under the client
// identity, and `@sluice/http/fetch` (src/fetch-api.ts), the throttled fetch for outbound calls.
export { createHandler } from './handler.js';
export { checkOptionsObject } from './compile-options.js';
export type { Handler, HandleResult, LimiterResult, Outcome } from './handler.js';
export type {
  DeniedEvent,
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

export { nodeHeaderTarget, writeHeaders } from './header-fields.js';
export type { HeaderField, HeaderStyle, HeaderTarget, LegacyReset } from './header-fields.js';
export type { ProblemDetails, RefusalKind } from './problem.js';
export type { DenyEntry } from './deny-list.js';
export { matchDenyList } from './deny-check.js';
export type { DenyListStep } from './options.js';
export { addressLost } from './request.js';
export type { HeaderBag, HttpRequest, SocketLike } from './request.js';
export { applyHeaders, toResponse } from './web.js';
export { BackgroundHooks } from './background.js';
export type { BackgroundHooksOptions, WaitUntil } from './background.js';
export { checkStackLayers, heldUntilEnd, releasingBody, runStackLayers } from './stack.js';
export type { EndingResponse, StackLayer, StackLayers, StackOutcome, StackRefusal } from './stack.js';
