import { SluiceError, type Limiter } from '@sluice/core';
import { describeValue as describe, isPromiseLike, optionalFunction, rejectUnknownOptions } from '@sluice/core/internal';
import { clientIpResolver, type ClientIpResult } from './client-ip.js';
import { HEADER_STYLES, type HeaderStyle } from '../shared/header-fields.js';
import { HTTP_OPTION_NAMES, type HttpLimitOptions, type LimiterEntry, type ShadowBanOptions } from './options.js';
import type { CompiledEntry, CompiledOptions, DenyListSteps } from './types.js';
import { warner } from './report.js';

type MaybePromise<T> = T | Promise<T>;

const ENTRY_OPTION_NAMES = ['limiter', 'kind', 'identify', 'cost', 'name'];
const SHADOW_BAN_OPTION_NAMES = ['when', 'status', 'body', 'contentType'];
const NAME_PATTERN = /^[\x20-\x7e]{1,64}$/;
const BUCKET_PATTERN = /^[\x21-\x7e]{1,64}$/;

function fail(message: string): never {
  throw new SluiceError('INVALID_OPTION', message);
}

function checkCost<R>(value: unknown, field: string): number | ((request: R) => MaybePromise<number>) | undefined {
  if (value === undefined || typeof value === 'function') return value as ((request: R) => MaybePromise<number>) | undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(`${field} must be a non-negative integer or a function (request) => number, got ${describe(value)}`);
  }
  return value;
}

function isLimiter(value: unknown): value is Limiter {
  const candidate = value as Limiter | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.limit === 'function' && typeof candidate.name === 'string';
}

function compileEntry<R>(value: unknown, index: number): CompiledEntry<R> {
  const field = `limiter[${index}]`;
  const entry = (isLimiter(value) ? { limiter: value } : value) as LimiterEntry<R> | undefined;
  if (typeof entry !== 'object' || entry === null || !isLimiter(entry.limiter)) {
    fail(`${field} must be a limiter from createLimiter() or { limiter, kind?, identify?, cost?, name? }, got ${describe(value)}`);
  }
  rejectUnknownOptions(entry, ENTRY_OPTION_NAMES, field);
  const kind = entry.kind ?? 'limit';
  if (kind !== 'limit' && kind !== 'shed') fail(`${field}.kind must be 'limit' or 'shed', got ${describe(kind)}`);
  const name = entry.name ?? entry.limiter.name;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    fail(`${field}.name must be 1 to 64 printable ASCII characters, got ${describe(name)}`);
  }
  return {
    limiter: entry.limiter,
    kind,
    name,
    identify: optionalFunction(entry.identify, `${field}.identify`, '(request) => id | undefined'),
    cost: checkCost<R>(entry.cost, `${field}.cost`),
    sync: undefined,
    store: storeName(entry.limiter),
    denySource: undefined,
    denyVersion: 0,
    denyMatcher: undefined,
    denyNow: limiterClock(entry.limiter),
  };
}

function limiterClock(limiter: Limiter): () => number {
  const clocked = limiter as Limiter & { now?: () => number };
  return typeof clocked.now === 'function' ? () => clocked.now!() : Date.now;
}

/** The class name of the store behind a limiter (`RedisStore`, `SqliteStore`), for messages only. */
function storeName(limiter: Limiter): string | undefined {
  const store: unknown = limiter.store;
  if (typeof store !== 'object' || store === null) return undefined;
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : undefined;
}

/**
 * Options must be an object, and not a limiter: `rateLimit(limiter)` is an easy slip, and the limiter's own
 * fields (`name`, `rules`) would otherwise be reported as unknown options. `what` names the argument.
 */
export function checkOptionsObject(value: unknown, what: string, example = 'rateLimit({ limiter })'): void {
  if (typeof value !== 'object' || value === null) fail(`${what} must be an object, got ${describe(value)}`);
  const candidate = value as { limit?: unknown; peek?: unknown };
  if (typeof candidate.limit === 'function' && typeof candidate.peek === 'function') {
    fail(`${what}: got a limiter where the options object goes; pass { limiter } instead, e.g. ${example}`);
  }
}

/** Validates every option once, at construction, with messages that name the field and what it accepts. */
export function compileOptions<R>(options: HttpLimitOptions<R>): CompiledOptions<R> {
  checkOptionsObject(options, 'rate limit options');
  rejectUnknownOptions(options, HTTP_OPTION_NAMES, 'rate limit options');
  const list = Array.isArray(options.limiter) ? (options.limiter as unknown[]) : [options.limiter];
  if (list.length === 0) fail('limiter must be a limiter or a non-empty list of them');
  const entries = list.map((value, index) => compileEntry<R>(value, index));

  let clientIp: CompiledOptions<R>['clientIp'];
  const ip = options.clientIp;
  if (typeof ip === 'function') {
    const resolve = clientIpResolver({ trustProxy: false });
    clientIp = (_request, raw) => {
      const text = ip(raw);
      const use = (value: string | undefined): ClientIpResult =>
        value === undefined
          ? { ok: false, problem: 'the clientIp function returned no address' }
          : resolve({ headers: {}, remoteAddress: value });
      return isPromiseLike<string | undefined>(text) ? text.then(use) : use(text);
    };
  } else if (ip !== false) {
    const resolve = clientIpResolver(ip ?? {});
    clientIp = (request) => resolve(request);
  }

  const missing = options.onMissingIdentity ?? 'refuse';
  let missingAnswer: string;
  if (missing === 'refuse' || missing === 'skip') {
    missingAnswer = missing;
  } else if (typeof missing === 'object' && missing !== null && typeof missing.bucket === 'string' && BUCKET_PATTERN.test(missing.bucket)) {
    missingAnswer = `bucket:${missing.bucket}`;
  } else {
    fail(`onMissingIdentity must be 'refuse', 'skip' or { bucket: 'name' } (1 to 64 visible ASCII characters), got ${describe(missing)}`);
  }

  const styles = compileStyles(options.headers);
  const legacyReset = options.legacyReset ?? 'epoch-seconds';
  if (legacyReset !== 'epoch-seconds' && legacyReset !== 'delta-seconds') {
    fail(`legacyReset must be 'epoch-seconds' or 'delta-seconds', got ${describe(legacyReset)}`);
  }
  const shadow = options.shadow ?? false;
  if (typeof shadow !== 'boolean') fail(`shadow must be true or false, got ${describe(shadow)}`);

  return {
    entries,
    needsShared: entries.some((e) => e.kind === 'limit'),
    identify: optionalFunction(options.identify, 'identify', '(request) => id | undefined'),
    clientIp,
    clientIpIsHook: typeof ip === 'function',
    // clientIpResolver checked it (48 to 64) when there is one.
    ipv6Prefix: typeof ip === 'object' && ip !== null && typeof ip.ipv6Prefix === 'number' ? ip.ipv6Prefix : 56,
    missing: missingAnswer,
    skip: optionalFunction(options.skip, 'skip', '(request) => boolean'),
    cost: checkCost<R>(options.cost, 'cost') ?? 1,
    shadow,
    shadowBan: compileShadowBan(options.shadowBan),
    styles,
    legacyReset,
    refusalResponse: optionalFunction(options.refusalResponse, 'refusalResponse', '(context) => response | undefined'),
    denyList: checkDenyListStep(options.denyList),
    onLimited: optionalFunction(options.onLimited, 'onLimited', '(event) => void'),
    onDenied: optionalFunction(options.onDenied, 'onDenied', '(event) => void'),
    onError: optionalFunction(options.onError, 'onError', '(error, event) => void'),
    warn: warner(),
    policyItems: new Map(),
  };
}

function compileStyles(value: unknown): readonly HeaderStyle[] {
  if (value === false) return [];
  const list = value === undefined ? ['draft-11'] : Array.isArray(value) ? value : [value];
  for (const style of list) {
    if (!HEADER_STYLES.includes(style as HeaderStyle)) {
      fail(`headers must be ${HEADER_STYLES.map((s) => `'${s}'`).join(', ')}, a list of them, or false, got ${describe(style)}`);
    }
  }
  const styles = [...new Set(list as HeaderStyle[])];
  const ownsRateLimit = styles.filter((s) => s === 'draft-11' || s === 'draft-7');
  if (ownsRateLimit.length > 1) fail(`headers: 'draft-11' and 'draft-7' both define the RateLimit field differently; pick one`);
  if (styles.includes('draft-6') && ownsRateLimit.length > 0) {
    fail(`headers: 'draft-6' and '${ownsRateLimit[0]}' both define RateLimit-Policy differently; pick one`);
  }
  return styles;
}

function compileShadowBan<R>(value: unknown): CompiledOptions<R>['shadowBan'] {
  if (value === undefined || value === false) return undefined;
  const options = (value === true ? {} : value) as ShadowBanOptions<R>;
  if (typeof options !== 'object' || options === null)
    fail(`shadowBan must be true, false or { when?, status?, body?, contentType? }, got ${describe(value)}`);
  rejectUnknownOptions(options, SHADOW_BAN_OPTION_NAMES, 'shadowBan');
  const status = options.status ?? 200;
  if (!Number.isInteger(status) || status < 200 || status > 599)
    fail(`shadowBan.status must be an HTTP status from 200 to 599, got ${describe(status)}`);
  const body = options.body ?? '{}';
  if (typeof body !== 'string') fail(`shadowBan.body must be a string, got ${describe(body)}`);
  const contentType = options.contentType ?? 'application/json; charset=utf-8';
  if (typeof contentType !== 'string') fail(`shadowBan.contentType must be a string, got ${describe(contentType)}`);
  return { when: optionalFunction(options.when, 'shadowBan.when', '(request, decision) => boolean'), status, body, contentType };
}

function checkDenyListStep(value: unknown): DenyListSteps | undefined {
  if (value === undefined) return undefined;
  const step = value as Partial<DenyListSteps> | null;
  if (typeof step !== 'object' || step === null || typeof step.needs !== 'function' || typeof step.check !== 'function') {
    fail(`denyList must be matchDenyList from @sluice/http or the adapter, got ${describe(value)}`);
  }
  return step as DenyListSteps;
}
