// The root export: what an application calls: the handler, client identity, the deny list's matcher, and writing a
// result onto a web Response. How the fields and problem bodies are built stays inside. The subpaths, one folder
// each: `@sluice/http/ip` (src/ip/), the address parsing under the client identity; `@sluice/http/fetch`
// (src/fetch/), the throttled fetch for outbound calls; and `@sluice/http/adapter` (src/adapter/), the kit the
// framework adapters are built from.
export { createHandler } from './handler/handler.js';
export type { Handler, HandleResult, LimiterResult, Outcome } from './handler/handler.js';
export type {
  DeniedEvent,
  ErrorEvent,
  HttpLimitOptions,
  IdentityValue,
  LimitedEvent,
  LimiterEntry,
  MissingIdentityAnswer,
  RefusalContext,
  RefusalResponse,
  ShadowBanOptions,
} from './handler/options.js';

export { clientIpResolver, PLATFORM_HEADERS } from './handler/client-ip.js';
export type { AddressSource, ClientIpOptions, ClientIpResult, Platform } from './handler/client-ip.js';
// A resolved client's `address` is one; the functions that parse and format it are on `@sluice/http/ip`.
export type { IpAddress } from './ip/address.js';

export type { HeaderField, HeaderStyle, LegacyReset } from './shared/header-fields.js';
export type { ProblemDetails, RefusalKind } from './handler/problem.js';
export type { DenyEntry } from './handler/deny/list.js';
export { matchDenyList } from './handler/deny/check.js';
export type { DenyListStep } from './handler/options.js';
export type { HeaderBag, HttpRequest } from './handler/request.js';
export { applyHeaders, toResponse } from './handler/web.js';
