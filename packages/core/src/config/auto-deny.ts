/**
 * Automatic deny, in the manner of fail2ban: an `onDecision` observer that counts each identity's refusals and,
 * when one is refused `after` times within `within`, adds it to the deny list in the shared store (`addDenyEntry`)
 * for `for`. Every instance watching the document (`watchConfig`) then holds the entry, and the HTTP layer answers
 * that identity 403 without asking the limiter. Off unless an application creates it.
 *
 * What it guarantees:
 * - memory is bounded: at most `maxTracked` identities are tracked, each with at most `after` refusal times; the
 *   identity refused longest ago is forgotten first;
 * - at most one write in flight and at most one write started per `writeEvery` (default 1 s): identities that
 *   earn a block meanwhile go into the next write together, so that many identities crossing the line at once
 *   (an attack rotating addresses or keys) cost every watching instance one read and one compile of the list per
 *   period, not one per identity; the first block after a quiet period is written at once;
 * - none for an identity this observer has already denied until its entry expires (refusals that arrive before
 *   the instances pick the entry up are not written again);
 * - nothing reaches the decision path: a failed write, a bad identity or a throwing `onError` is reported or
 *   swallowed, never thrown and never an unhandled rejection.
 * Counted are enforced refusals by the limiter's rules (`limit` calls, reason `rate_limited`, not degraded): a
 * shadow-mode refusal is a dry run, and a fail-closed answer while the store is down says nothing of the caller.
 */
import { readClock } from '../shared/clock.js';
import { addDenyEntries } from './deny-writers.js';
import type { ConfigSource } from './source.js';
import { checkDenyEntry, MAX_DENY_REASON_LENGTH } from '../deny/entries.js';
import { describe } from '../shared/describe.js';
import { durationOption, type Duration, type DurationRange } from '../shared/duration.js';
import { SluiceError } from '../shared/errors.js';
import type { DecisionEvent } from '../limiter/types.js';
import { timers, unref } from '../shared/timers.js';
import {
  clockOption,
  nameOption,
  optionalFunction,
  optionNames,
  positiveInteger,
  rejectUnknownOptions,
  requireObject,
  timerDuration,
} from '../shared/validate.js';

export interface AutoDenyOptions {
  /** Where the deny list is kept (the store every instance watches). */
  source: ConfigSource;
  /** The limiter's name: whose document the entries go into. */
  name: string;
  /** Refusals that earn a block. @default 20 */
  after?: number;
  /** The window in which `after` refusals must fall. @default '1m' */
  within?: Duration;
  /** How long a block lasts (its entry's `until` is now plus this). @default '1h' */
  for?: Duration;
  /** Most identities tracked at once; the one refused longest ago is forgotten first. @default 10_000 */
  maxTracked?: number;
  /** The entry's reason (at most 200 characters). @default 'automatic: refused <after> times within <within>' */
  reason?: string;
  /** Epoch milliseconds. Inject a fake clock in tests. @default Date.now */
  clock?: () => number;
  /**
   * At most one write of the deny list per this period; identities denied in between are written together in the
   * next. 0 writes each as soon as the previous write has settled. @default '1s'
   */
  writeEvery?: Duration;
  /** Called when an entry could not be written (the store failed, the list is full). @default console.warn */
  onError?: (error: unknown, identity: string) => void;
}

export interface AutoDeny {
  /** Give it to `createLimiter({ onDecision })` (or call it from your own observer). Cheap for allowed decisions. */
  readonly onDecision: (event: DecisionEvent) => void;
  /** Stops counting and forgets what it tracked; settles (never rejects) once the writes in flight have. */
  close(): Promise<void>;
}

/** One identity: its recent refusal times (oldest first, at most `after`), or the time its block ends. */
interface Tracked {
  times: number[];
  deniedUntil: number;
}

/** A block from one second up to a year; `until` stays far inside the clock's range. */
const FOR_RANGE: DurationRange = { min: 1_000, max: 366 * 86_400_000 };
const KNOWN = optionNames<AutoDenyOptions>({
  source: true,
  name: true,
  after: true,
  within: true,
  for: true,
  maxTracked: true,
  reason: true,
  writeEvery: true,
  clock: true,
  onError: true,
});
const WRITE_EVERY_RANGE: DurationRange = { min: 0, max: 3_600_000 };

/**
 * Makes the observer. Combine it with another with a small function: `onDecision: (e) => { metrics(e); deny.onDecision(e); }`.
 * @example
 * const deny = createAutoDeny({ source: redisConfigSource(redis), name: 'api', after: 20, within: '1m', for: '1h' });
 * const limiter = createLimiter({ store, rules, name: 'api', onDecision: deny.onDecision });
 */
export function createAutoDeny(options: AutoDenyOptions): AutoDeny {
  const raw = requireObject(options, 'createAutoDeny') as unknown as AutoDenyOptions;
  rejectUnknownOptions(raw, KNOWN, 'createAutoDeny');
  const source = raw.source as Partial<ConfigSource> | undefined;
  if (typeof source !== 'object' || source === null || typeof source.read !== 'function' || typeof source.write !== 'function') {
    throw new SluiceError(
      'INVALID_OPTION',
      `createAutoDeny: source must be a config source such as redisConfigSource(redis), got ${describe(raw.source)}`,
    );
  }
  nameOption(raw.name, 'createAutoDeny: name');
  const after = positiveInteger(raw.after ?? 20, 'createAutoDeny: after');
  const withinMs = timerDuration(raw.within ?? '1m', 'createAutoDeny: within');
  const forMs = durationOption(raw.for ?? '1h', 'createAutoDeny: for', FOR_RANGE);
  const maxTracked = positiveInteger(raw.maxTracked ?? 10_000, 'createAutoDeny: maxTracked');
  const writeEveryMs = durationOption(raw.writeEvery ?? '1s', 'createAutoDeny: writeEvery', WRITE_EVERY_RANGE);
  const reason = raw.reason ?? `automatic: refused ${after} times within ${describeDuration(raw.within ?? '1m')}`;
  if (typeof reason !== 'string' || reason.length > MAX_DENY_REASON_LENGTH) {
    throw new SluiceError(
      'INVALID_OPTION',
      `createAutoDeny: reason must be a string of at most ${MAX_DENY_REASON_LENGTH} characters, got ${describe(reason)}`,
    );
  }
  const clock = clockOption(raw.clock, 'createAutoDeny: clock');
  const onError = optionalFunction(raw.onError, 'createAutoDeny: onError', '(error, identity) => void') ?? defaultError;
  return new AutoDenyObserver(
    source as ConfigSource,
    raw.name,
    { after, withinMs, forMs, maxTracked, reason, writeEveryMs },
    clock,
    onError,
  );
}

class AutoDenyObserver implements AutoDeny {
  /** Insertion order is refusal order: an identity refused again moves to the end, so the first is the one to forget. */
  private readonly tracked = new Map<string, Tracked>();
  /** Identities that earned a block and wait for the next write, with their state and the end of their block. */
  private pending = new Map<string, { state: Tracked; until: number }>();
  /** Identities in the write in flight. */
  private writing = new Set<string>();
  private inFlight: Promise<void> | undefined;
  /** When the last write started (the observer's clock), for `writeEvery`. */
  private lastWrite = Number.NEGATIVE_INFINITY;
  private timer: unknown;
  private closed = false;
  readonly onDecision = (event: DecisionEvent): void => {
    const decision = event.decision;
    if (decision.allowed || this.closed || decision.reason !== 'rate_limited' || decision.degraded || event.operation !== 'limit') return;
    try {
      this.refused(event.identity, readClock(this.clock, 'createAutoDeny'));
    } catch (error) {
      this.report(error, event.identity);
    }
  };

  constructor(
    private readonly source: ConfigSource,
    private readonly name: string,
    private readonly settings: { after: number; withinMs: number; forMs: number; maxTracked: number; reason: string; writeEveryMs: number },
    private readonly clock: () => number,
    private readonly onError: (error: unknown, identity: string) => void,
  ) {}

  async close(): Promise<void> {
    this.closed = true;
    this.tracked.clear();
    if (this.timer !== undefined) timers.clearTimeout(this.timer);
    this.timer = undefined;
    // Blocks already earned are still written: the identities were refused `after` times.
    if (this.inFlight !== undefined) await this.inFlight;
    if (this.pending.size > 0) this.write();
    if (this.inFlight !== undefined) await this.inFlight;
  }

  private refused(identity: string, now: number): void {
    if (this.pending.has(identity) || this.writing.has(identity)) return;
    let state = this.tracked.get(identity);
    if (state === undefined) {
      state = { times: [], deniedUntil: -1 };
      if (this.tracked.size >= this.settings.maxTracked) this.tracked.delete(this.tracked.keys().next().value!);
    } else this.tracked.delete(identity);
    this.tracked.set(identity, state);
    if (now < state.deniedUntil) return;
    const { times } = state;
    times.push(now);
    if (times.length > this.settings.after) times.shift();
    // The window holds refusals in (now - within, now]; times are kept in arrival order, so only the oldest can fall out.
    if (times.length < this.settings.after || times[0]! <= now - this.settings.withinMs) return;
    times.length = 0;
    // An identity the list cannot hold (too long, control characters) is refused alone, not with its batch.
    checkDenyEntry({ match: identity }, 'createAutoDeny: entry');
    this.pending.set(identity, { state, until: now + this.settings.forMs });
    this.schedule(now);
  }

  /** Writes now when no write is in flight and `writeEvery` has passed since the last; else when they have. */
  private schedule(now: number): void {
    if (this.inFlight !== undefined || this.pending.size === 0) return;
    const wait = this.lastWrite + this.settings.writeEveryMs - now;
    if (wait <= 0) {
      // The period has passed on the observer's clock (a timer may still be set, from a reading before).
      if (this.timer !== undefined) timers.clearTimeout(this.timer);
      this.timer = undefined;
      this.write();
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = unref(
      timers.setTimeout(() => {
        this.timer = undefined;
        if (!this.closed) this.write();
      }, wait),
    );
  }

  private write(): void {
    const batch = this.pending;
    this.pending = new Map();
    this.writing = new Set(batch.keys());
    let now: number;
    try {
      now = readClock(this.clock, 'createAutoDeny');
    } catch (error) {
      for (const identity of batch.keys()) this.report(error, identity);
      this.writing = new Set();
      return;
    }
    this.lastWrite = now;
    const entries = [...batch].map(([match, { until }]) => ({ match, until: Math.max(until, now + 1), reason: this.settings.reason }));
    this.inFlight = addDenyEntries(this.source, this.name, entries, { now }).then(
      () => {
        for (const { state, until } of batch.values()) state.deniedUntil = until;
      },
      (error: unknown) => {
        for (const identity of batch.keys()) this.report(error, identity);
      },
    );
    void this.inFlight.then(() => {
      this.inFlight = undefined;
      this.writing = new Set();
      if (!this.closed) this.schedule(readClockOr(this.clock, this.lastWrite));
    });
  }

  private report(error: unknown, identity: string): void {
    try {
      this.onError(error, identity);
    } catch {
      // The error handler's own failure is its own: the decision path never sees it.
    }
  }
}

/** The clock's reading, or `fallback` when it throws (reported already where it mattered). */
function readClockOr(clock: () => number, fallback: number): number {
  try {
    return readClock(clock, 'createAutoDeny');
  } catch {
    return fallback;
  }
}

function describeDuration(value: Duration): string {
  return typeof value === 'number' ? `${value} ms` : value;
}

function defaultError(error: unknown, identity: string): void {
  const message = error instanceof Error ? error.message : String(error);
  timers.console?.warn(`[sluice] createAutoDeny: could not deny ${JSON.stringify(identity.slice(0, 64))}: ${message}`);
}
