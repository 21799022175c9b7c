import { SluiceError } from '@sluice/core';
import { describeValue, isPromiseLike } from '@sluice/core/internal';
import type { ClientIpResult } from './client-ip.js';
import type { CompiledOptions } from './types.js';
import type { IdentityValue } from './options.js';
import type { HttpRequest } from './request.js';

/**
 * Who a request counts against: the authenticated id (`user:…`), else the client IP (`ip:…`), else the named
 * bucket (`bucket:…`). A problem when there is none; `lost` when the client's address was lost with its
 * connection, which is refused whatever onMissingIdentity says.
 */
export type SharedIdentity = string | { readonly problem: string; readonly lost?: true };

const CONNECTION_LOST: SharedIdentity = {
  problem: 'there is no authenticated id and the connection was reset before its address could be read',
  lost: true,
};

/**
 * The shared identity, through the `identify` hook when there is one (which may answer with a promise). `ip` is
 * the client address when it was resolved already (for the deny list), so it is not resolved twice.
 */
export function resolveShared<R>(
  o: CompiledOptions<R>,
  request: HttpRequest,
  raw: R,
  ip?: ClientIpResult,
): SharedIdentity | PromiseLike<SharedIdentity> {
  if (o.identify === undefined) return afterIdentify(o, request, raw, undefined, ip);
  const value = o.identify(raw);
  return isPromiseLike(value) ? value.then((v) => afterIdentify(o, request, raw, v, ip)) : afterIdentify(o, request, raw, value, ip);
}

/** The shared identity once `identify` answered `value`: synchronous unless clientIp is a hook returning a promise. */
export function afterIdentify<R>(
  o: CompiledOptions<R>,
  request: HttpRequest,
  raw: R,
  value: IdentityValue,
  resolved?: ClientIpResult,
): SharedIdentity | PromiseLike<SharedIdentity> {
  const id = identityText(value, 'identify');
  if (id !== undefined) return `user:${id}`;
  if (o.clientIp === undefined) return fromAddress(o, undefined);
  // Not "no identity": counting it in a shared bucket, or letting it through, would reward resetting.
  if (request.connectionLost === true) return CONNECTION_LOST;
  const ip = resolved ?? o.clientIp(request, raw);
  return isPromiseLike(ip) ? ip.then((r) => fromAddress(o, r)) : fromAddress(o, ip);
}

function fromAddress<R>(o: CompiledOptions<R>, ip: ClientIpResult | undefined): SharedIdentity {
  if (ip !== undefined && ip.ok) return ip.identity;
  if (o.missing !== 'refuse' && o.missing !== 'skip') return o.missing;
  return {
    problem:
      ip === undefined
        ? 'there is no authenticated id and IP fallback is off (clientIp: false)'
        : `there is no authenticated id and ${ip.problem}`,
  };
}

/** An identify hook's answer as key text; undefined for "no identity". Anything else is a programming error. */
export function identityText(value: IdentityValue, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new SluiceError('INVALID_IDENTITY', `${field} must return a string, a number, undefined or null, got ${describeValue(value)}`);
}
