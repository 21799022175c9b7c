/**
 * When a limiter's deny list is compiled (deny-list.ts), for the deny list step (deny-check.ts). Compiling 100,000
 * entries takes tens to hundreds of milliseconds, and every instance compiles each new list (each entry `autoDeny`
 * adds makes one), so a long list is not compiled in one piece on a request:
 * - a limiter's first list, and any list of at most `COMPILE_AT_ONCE` entries, is compiled at once by the request
 *   that first sees it: a list set at start applies from the first request;
 * - a longer list that replaces another is compiled `COMPILE_PART` entries at a time, a part on each request that
 *   sees it and a part per timer turn between requests, while the list it replaces goes on applying. It applies
 *   from the request that compiles its last part.
 * Matchers are kept by list object and IPv6 prefix and shared by every handler in the process, so a list is
 * compiled once however many routes use its limiter. Weak, so a replaced list is collected with its matcher.
 */
import type { DenyEntry } from '@sluice/core/config';
import { DenyListCompiler, type DenyMatcher } from './deny-list.js';

/** Longest list compiled in one piece on a request (a few milliseconds): a limiter's first list may be longer. */
export const COMPILE_AT_ONCE = 4096;
/** Entries compiled per part of a longer list (about a millisecond or two). */
export const COMPILE_PART = 2048;

interface Partial {
  readonly compiler: DenyListCompiler;
  /** A timer turn is due to compile the next part. */
  scheduled: boolean;
}

const compiled = new WeakMap<readonly DenyEntry[], Map<number, DenyMatcher>>();
const partial = new WeakMap<readonly DenyEntry[], Map<number, Partial>>();

const timers = globalThis as unknown as { setTimeout?: (callback: () => void, ms: number) => unknown };

/** The list's matcher when it is compiled, else undefined. */
export function compiledMatcher(list: readonly DenyEntry[], ipv6Prefix: number): DenyMatcher | undefined {
  return compiled.get(list)?.get(ipv6Prefix);
}

/** The list's matcher, compiled now (the rest of it, when it was being compiled in parts). */
export function compileNow(list: readonly DenyEntry[], ipv6Prefix: number): DenyMatcher {
  const done = compiledMatcher(list, ipv6Prefix);
  if (done !== undefined) return done;
  const compiler = partialFor(list, ipv6Prefix).compiler;
  compiler.step(list.length);
  return finish(list, ipv6Prefix, compiler);
}

/**
 * Compiles the next part of the list; its matcher once the last part is done, else undefined. While parts remain,
 * a timer turn compiles the next one, for as long as `wanted()` says some limiter still has this list.
 */
export function compileAPart(list: readonly DenyEntry[], ipv6Prefix: number, wanted: () => boolean): DenyMatcher | undefined {
  const done = compiledMatcher(list, ipv6Prefix);
  if (done !== undefined) return done;
  const job = partialFor(list, ipv6Prefix);
  job.compiler.step(COMPILE_PART);
  if (job.compiler.done) return finish(list, ipv6Prefix, job.compiler);
  if (!job.scheduled && typeof timers.setTimeout === 'function') {
    job.scheduled = true;
    const handle = timers.setTimeout(() => {
      job.scheduled = false;
      if (compiledMatcher(list, ipv6Prefix) === undefined && wanted()) compileAPart(list, ipv6Prefix, wanted);
    }, 0);
    // Node: the background compile never keeps a process alive on its own.
    (handle as { unref?: () => void } | undefined)?.unref?.();
  }
  return undefined;
}

function partialFor(list: readonly DenyEntry[], ipv6Prefix: number): Partial {
  let byPrefix = partial.get(list);
  if (byPrefix === undefined) partial.set(list, (byPrefix = new Map()));
  let job = byPrefix.get(ipv6Prefix);
  if (job === undefined) byPrefix.set(ipv6Prefix, (job = { compiler: new DenyListCompiler(list, ipv6Prefix), scheduled: false }));
  return job;
}

function finish(list: readonly DenyEntry[], ipv6Prefix: number, compiler: DenyListCompiler): DenyMatcher {
  const matcher = compiler.finish();
  let byPrefix = compiled.get(list);
  if (byPrefix === undefined) compiled.set(list, (byPrefix = new Map()));
  byPrefix.set(ipv6Prefix, matcher);
  partial.get(list)?.delete(ipv6Prefix);
  return matcher;
}
