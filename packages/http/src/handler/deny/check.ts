/**
 * The deny list step of the handler, before any limiter decides: each consulted limiter's `deny` list (set by
 * `configure({ deny })` or `watchConfig`) is compiled once per list object, or reached from an earlier list's matcher
 * changed in place when only some entries changed (`a live deny list's change()`; deny-matcher.ts; when,
 * deny-compile.ts), and matched against the shared identity and the client address, read with the same trust rules
 * as limiting. The list has a mode of its own, the limiter's `denyMode`, apart from the limiter's `mode` (the kill
 * switch turns off limits, not the list): `off` skips the list; `shadow` (or the handler's `shadow`) reports a match
 * to onDenied and the request goes on.
 */
import { SluiceError } from '@sluice/core';
import type { DenyLineage } from '@sluice/core/config';
import { isPromiseLike } from '@sluice/core/internal';
import type { ClientIpResult } from '../client-ip.js';
import type { CompiledEntry, CompiledOptions, DenyListSteps, HandleResult } from '../types.js';
import { COMPILE_AT_ONCE, compileAPart, compileNow, readyMatcher } from './compile.js';
import type { DenyEntry } from './list.js';
import type { DenyMatcher } from './matcher.js';
import { formatIp } from '../../ip/address.js';
import type { DeniedEvent } from '../options.js';
import { report } from '../report.js';
import { refusal } from '../response.js';
import { DENY_ADDRESS, DENY_IDENTITY, DENY_NONE } from './step.js';
import type { DenyListStep } from '../options.js';

/**
 * Whether the deny list step has anything to do for this request, compiling a list the first time it is seen
 * (and reporting its malformed entries once, to onError). Allocates nothing when no limiter has a list. Every
 * limiter's list is visited, never stopping at the first that needs the address: this is where a long list that
 * replaced another gets this request's part.
 */
function denyNeeds<R>(o: CompiledOptions<R>, raw: R): number {
  let needs = DENY_NONE;
  for (let i = 0; i < o.entries.length; i++) {
    const matcher = current(o, o.entries[i]!, raw, true);
    if (matcher === undefined) continue;
    if (matcher.hasRanges) needs = DENY_ADDRESS;
    else if (matcher.size > 0 && needs === DENY_NONE) needs = DENY_IDENTITY;
  }
  return needs;
}

/**
 * The matcher for the entry's limiter's current list, or undefined when its deny mode is `off` or nothing applies.
 * While a long list that replaced another is compiled in parts, the replaced list's matcher (see deny-compile.ts);
 * `part` says whether this call may compile the next part (once per request).
 */
function current<R>(o: CompiledOptions<R>, entry: CompiledEntry<R>, raw: R, part: boolean): DenyMatcher | undefined {
  const limiter = entry.limiter;
  if (limiter.denyMode === 'off') return undefined;
  const lineage = limiter.denyLineage;
  if (lineage !== undefined) {
    // A core limiter: the same matcher for as long as the list does not change (its lineage's head stays).
    if (entry.denySource === lineage && entry.denyVersion === lineage.head) return entry.denyMatcher;
    return next(o, entry, raw, part, lineage, lineage.head);
  }
  // `deny` may be absent on a Limiter implemented outside core, written before the deny list existed.
  const list: readonly DenyEntry[] | undefined = limiter.deny;
  if (list === undefined) return undefined;
  if (list.length === 0) {
    // Nothing applies now; a long list after it is compiled in parts, nothing applying meanwhile.
    if (entry.denySource !== list) {
      entry.denySource = list;
      entry.denyMatcher = EMPTY;
    }
    return undefined;
  }
  if (entry.denySource === list) return entry.denyMatcher;
  return next(o, entry, raw, part, list, 0);
}

/**
 * The matcher of the limiter's list when it is not the entry's (`source` at `version`): ready, compiled now, or a
 * part compiled and the entry's matcher meanwhile. Reports the malformed entries the entry has not seen yet.
 */
function next<R>(
  o: CompiledOptions<R>,
  entry: CompiledEntry<R>,
  raw: R,
  part: boolean,
  source: DenyLineage | readonly DenyEntry[],
  version: number,
): DenyMatcher | undefined {
  const limiter = entry.limiter;
  const held = entry.denyMatcher;
  const prefix = o.ipv6Prefix;
  const matcher =
    readyMatcher(limiter, prefix) ??
    (held === undefined || (limiter.denyLineage?.size ?? limiter.deny.length) <= COMPILE_AT_ONCE
      ? compileNow(limiter, prefix)
      : part
        ? compileAPart(limiter, prefix)
        : undefined);
  if (matcher === undefined) return held === EMPTY ? undefined : held;
  // The same matcher, changed in place since this entry's version of the lineage: only what the changes added is news.
  const problems = matcher === held && entry.denySource === source ? matcher.problemsSince(entry.denyVersion) : matcher.problems;
  entry.denySource = source;
  entry.denyVersion = version;
  entry.denyMatcher = matcher;
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
    const error = new SluiceError('INVALID_OPTION', `deny list of "${entry.name}": ${problems[0]}${more}; left out`);
    report(o, error, { request: raw, source: 'deny-list', limiterName: entry.name }, entry.store);
  }
  return matcher;
}

/** The matcher of an empty list: what applies while a long list that replaced it is compiled. */
const EMPTY: DenyMatcher = { size: 0, hasRanges: false, problems: [], match: () => undefined };

/**
 * After `denyNeeds`: the 403 when a limiter whose deny mode is `enforce` lists the identity or address, else
 * undefined (no match, or only shadow ones, which are reported). The limiter's own `mode` plays no part. `ip` is the client address when it was resolved.
 */
function checkDeny<R>(
  o: CompiledOptions<R>,
  raw: R,
  identity: string | undefined,
  ip: ClientIpResult | undefined,
): HandleResult | undefined {
  const address = ip !== undefined && ip.ok ? ip.address : undefined;
  for (let i = 0; i < o.entries.length; i++) {
    const entry = o.entries[i]!;
    // No part of a long list here: denyNeeds compiled this request's part (it may not have reached every entry).
    const matcher = current(o, entry, raw, false);
    if (matcher === undefined) continue;
    const found = matcher.match(identity, address, entry.denyNow);
    if (found === undefined) continue;
    const shadow = o.shadow || entry.limiter.denyMode === 'shadow';
    denied(o, {
      request: raw,
      identity,
      address: address === undefined ? undefined : formatIp(address),
      limiterName: entry.name,
      entry: found,
      shadow,
    });
    if (shadow) continue;
    return refusal(o, raw, { kind: 'denied', rateHeaders: [], identity, degraded: false, reason: found.reason, results: [] });
  }
  return undefined;
}

/** Calls onDenied; an exception from it, or a rejection, goes to onError, as one from onLimited does. */
function denied<R>(o: CompiledOptions<R>, event: DeniedEvent<R>): void {
  if (o.onDenied === undefined) return;
  try {
    const returned: unknown = o.onDenied(event);
    if (isPromiseLike(returned)) {
      returned.then(undefined, (error: unknown) =>
        report(o, error, { request: event.request, source: 'hook', limiterName: event.limiterName }),
      );
    }
  } catch (error) {
    report(o, error, { request: event.request, source: 'hook', limiterName: event.limiterName });
  }
}

/**
 * The deny list step: give it as the `denyList` option (`rateLimit({ limiter, denyList: matchDenyList })`) to
 * refuse clients on a limiter's deny list with 403 before any limiter decides.
 */
const steps: DenyListSteps = { step: 'deny-list', needs: denyNeeds, check: checkDeny };
export const matchDenyList: DenyListStep = steps;
