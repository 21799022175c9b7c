/**
 * Where the deny list step (deny-check.ts) gets the matcher (deny-matcher.ts) of a limiter's list, and when a list is
 * compiled. Compiling 100,000 entries takes tens to hundreds of milliseconds, and every instance would compile each
 * new list, so:
 * - a core limiter's list is a lineage (core's deny/lineage.ts): `a live deny list's change()` changes it in place and
 *   journals the change. One matcher follows each lineage (per IPv6 prefix), at the version (`head`) it has taken
 *   the changes up to, and takes the journal's changes since, in place, at a cost per entry changed: no pass over
 *   the list. Only a new lineage (`configure({ deny })`), or one that moved on further than its journal reaches, is
 *   compiled whole;
 * - a limiter implemented outside core, without a lineage, has its list compiled whole per list object;
 * - a whole compile of a limiter's first list, or of a list of at most `COMPILE_AT_ONCE` entries, is done at once by
 *   the request that first sees it (a list set at start applies from the first request); a longer list that replaces
 *   another is compiled `COMPILE_PART` entries at a time, a part on each request that sees it and a part per timer
 *   turn between requests, while the list it replaces goes on applying. It applies from the request that compiles
 *   its last part. A lineage that changes meanwhile does not restart it: the compile carries on with the list as it
 *   was, then takes the changes since, so changes arriving faster than the compile cannot starve it.
 * Matchers are kept per lineage (or list object) and IPv6 prefix and shared by every handler in the process, so a
 * list is compiled once however many routes use its limiter; weakly, so a replaced list is collected with its
 * matcher. A matcher follows one lineage only: a limiter given another's array begins a lineage of its own, and gets
 * a matcher of its own, which the other's changes never reach.
 */
import type { Limiter } from '@sluice/core';
import { denyChangesSince, type DenyEntry, type DenyLineage } from '@sluice/core/config';
import { timers, unref } from '@sluice/core/internal';
import { DenyListCompiler } from './list.js';
import type { MutableDenyMatcher } from './matcher.js';

/** Longest list compiled in one piece on a request (a few milliseconds): a limiter's first list may be longer. */
export const COMPILE_AT_ONCE = 4096;
/** Entries compiled per part of a longer list (about a millisecond or two). */
export const COMPILE_PART = 2048;

/** What holds the list: a limiter (`denyLineage` is absent on one implemented outside core). */
export type DenyHolder = Pick<Limiter, 'deny' | 'denyLineage'>;

interface Job {
  readonly compiler: DenyListCompiler;
  /** The list being compiled, as it was when the compile began. */
  readonly list: readonly DenyEntry[];
  /** Its version in its lineage (0 without one). */
  readonly version: number;
  /** A timer turn is due to compile the next part. */
  scheduled: boolean;
}

/** The matcher that follows each lineage: its `version` is the lineage's head it has taken the changes up to. */
const followed = new WeakMap<DenyLineage, Map<number, MutableDenyMatcher>>();
/** Matchers of lists without a lineage, by list object. */
const byList = new WeakMap<readonly DenyEntry[], Map<number, MutableDenyMatcher>>();
/** Compiles under way, by lineage (or list object). */
const jobs = new WeakMap<object, Map<number, Job>>();

/**
 * The matcher of the holder's list when one is ready, else undefined: the lineage's, brought to its head by the
 * journal's changes (O(entries changed)), or the one compiled for the list object.
 */
export function readyMatcher(holder: DenyHolder, ipv6Prefix: number): MutableDenyMatcher | undefined {
  const lineage = holder.denyLineage;
  if (lineage === undefined) return byList.get(holder.deny)?.get(ipv6Prefix);
  const byPrefix = followed.get(lineage);
  const matcher = byPrefix?.get(ipv6Prefix);
  if (matcher === undefined) return undefined;
  const head = lineage.head;
  if (matcher.version === head) return matcher;
  const steps = denyChangesSince(lineage, matcher.version, head);
  if (steps === undefined) return undefined;
  for (const step of steps) matcher.apply(step);
  if (matcher.entries !== lineage.size) {
    // The journal did not lead to the list (which core never lets happen): compiled whole instead.
    byPrefix!.delete(ipv6Prefix);
    return undefined;
  }
  return matcher;
}

/** The matcher of the holder's list, compiled now (the rest of it, when it was being compiled in parts). */
export function compileNow(holder: DenyHolder, ipv6Prefix: number): MutableDenyMatcher {
  const ready = readyMatcher(holder, ipv6Prefix);
  if (ready !== undefined) return ready;
  const list = holder.deny;
  const job = jobs.get(holder.denyLineage ?? list)?.get(ipv6Prefix);
  const compiler = job?.list === list ? job.compiler : new DenyListCompiler(list, ipv6Prefix);
  compiler.step(list.length);
  return finish(holder, ipv6Prefix, compiler, holder.denyLineage?.head ?? 0);
}

/**
 * Compiles the next part of the holder's list; its matcher once the last part is done, else undefined. While parts
 * remain, a timer turn compiles the next one, for as long as the holder keeps this lineage (or list object).
 */
export function compileAPart(holder: DenyHolder, ipv6Prefix: number): MutableDenyMatcher | undefined {
  const ready = readyMatcher(holder, ipv6Prefix);
  if (ready !== undefined) return ready;
  const key: object = holder.denyLineage ?? holder.deny;
  let byPrefix = jobs.get(key);
  if (byPrefix === undefined) jobs.set(key, (byPrefix = new Map()));
  let job = byPrefix.get(ipv6Prefix);
  if (job === undefined) {
    const list = holder.deny;
    job = { compiler: new DenyListCompiler(list, ipv6Prefix), list, version: holder.denyLineage?.head ?? 0, scheduled: false };
    byPrefix.set(ipv6Prefix, job);
  }
  job.compiler.step(COMPILE_PART);
  if (job.compiler.done) {
    finish(holder, ipv6Prefix, job.compiler, job.version);
    // A lineage that changed meanwhile: the changes since the list the compile began with.
    return readyMatcher(holder, ipv6Prefix);
  }
  if (!job.scheduled && typeof timers.setTimeout === 'function') {
    job.scheduled = true;
    const started = job;
    // Node: the background compile never keeps a process alive on its own.
    unref(
      timers.setTimeout(() => {
        started.scheduled = false;
        if (byPrefix.get(ipv6Prefix) === started && (holder.denyLineage ?? holder.deny) === key) compileAPart(holder, ipv6Prefix);
      }, 0),
    );
  }
  return undefined;
}

/** Keeps the matcher the compiler built of the list at `version`: as its lineage's, or its list object's. */
function finish(holder: DenyHolder, ipv6Prefix: number, compiler: DenyListCompiler, version: number): MutableDenyMatcher {
  const matcher = compiler.finish();
  matcher.version = version;
  const lineage = holder.denyLineage;
  const pending = jobs.get(lineage ?? compiler.list);
  const job = pending?.get(ipv6Prefix);
  if (job !== undefined && job.version <= version) pending!.delete(ipv6Prefix);
  if (lineage === undefined) keep(byList, compiler.list, ipv6Prefix, matcher);
  else keep(followed, lineage, ipv6Prefix, matcher);
  return matcher;
}

/** Keeps `matcher` for `key`, unless one at a later version is kept there. */
function keep<K extends object>(
  kept: WeakMap<K, Map<number, MutableDenyMatcher>>,
  key: K,
  ipv6Prefix: number,
  matcher: MutableDenyMatcher,
): void {
  let byPrefix = kept.get(key);
  if (byPrefix === undefined) kept.set(key, (byPrefix = new Map()));
  const held = byPrefix.get(ipv6Prefix);
  if (held === undefined || held.version <= matcher.version) byPrefix.set(ipv6Prefix, matcher);
}
