/**
 * The fleet-usage load shedder (the "Fleet usage load shedder" of the article 'Scaling your API with rate
 * limiters'): it keeps a fraction of the fleet's capacity for critical work. Fleet-wide in-flight work is counted as
 * concurrency leases on one global key of the shared store, so every instance sees the same count. A class may hold
 * leases only while fewer than its share of the capacity are held: the first (most important) class up to the whole
 * capacity, the last up to (1 − reserve) × capacity, the classes between on a straight line. So when the fleet fills
 * up, the least important class is shed first, and critical requests still pass until the capacity itself is
 * reached. Refusals are 503s: the fleet is at capacity, the client did nothing wrong.
 */
import {
  createConcurrencyLimiter,
  type AcquireOptions,
  type ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  type LeaseDecision,
} from '../concurrency/concurrency-limiter.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { notify, performanceNow } from '../limiter/observe.js';
import type { LimiterMode } from '../shared/types.js';
import {
  optionalFunction,
  optionNames,
  priorityClasses,
  rejectUnknownOptions,
  requireObject,
  unknownPriorityClass,
} from '../shared/validate.js';

export interface FleetShedderOptions extends Omit<ConcurrencyLimiterOptions, 'limit' | 'onDecision'> {
  /** Requests the whole fleet can have in flight at once, a positive integer. */
  capacity: number;
  /** Fraction of the capacity kept for the first class: the last class is shed from (1 − reserve) × capacity. @default 0.2 */
  reserve?: number;
  /** Priority classes, most important first. @default ['critical', 'write', 'read', 'test'] */
  classes?: readonly string[];
  /**
   * Called after every `acquire` with what was decided and how long it took (metrics, logs; see `@sluice/otel`),
   * as `createLimiter`'s `onDecision`. It runs inline: keep it cheap. An exception it throws is swallowed.
   * Unset, it costs nothing.
   */
  onDecision?: (event: FleetEvent) => void;
}

/** What a fleet shedder's `onDecision` receives. */
export interface FleetEvent {
  /** Which kind of component decided: one observer can take the events of limiters, concurrency limiters and shedders. */
  readonly component: 'fleet';
  /** The shedder's name (its `name` option, 'fleet' by default). */
  readonly limiter: string;
  readonly operation: 'acquire';
  /** The request's class. There is no identity: the fleet counts every request on one key. */
  readonly priority: string;
  readonly decision: FleetDecision;
  /** From the call to its answer, in ms (fractional where the runtime's performance.now() is), store call included. */
  readonly durationMs: number;
}

export interface FleetDecision extends Omit<LeaseDecision, 'reason'> {
  /** `shed` (503): the fleet is at this class's share of capacity. The others as for a lease decision. */
  readonly reason: 'ok' | 'shed' | 'shadow' | 'disabled' | 'store_unavailable';
  readonly priority: string;
}

export interface FleetShedder {
  /** Namespaces the fleet's key; shared by every instance that counts the same fleet. */
  readonly name: string;
  readonly classes: readonly string[];
  /** Takes a fleet-wide lease for one request of class `priority`; release it when the request ends. */
  acquire(priority: string, options?: AcquireOptions): Promise<FleetDecision>;
  /** Most leases the fleet may hold when a request of this class arrives. */
  limitFor(priority: string): number;
  /** Changes the capacity, the reserve or the mode at run time; held leases are kept. */
  configure(changes: { capacity?: number; reserve?: number; mode?: LimiterMode }): void;
}

const WHERE = 'createFleetShedder';
const KNOWN = optionNames<FleetShedderOptions>({
  store: true,
  capacity: true,
  reserve: true,
  classes: true,
  ttl: true,
  name: true,
  prefix: true,
  clock: true,
  mode: true,
  timeout: true,
  onStoreError: true,
  circuitBreaker: true,
  onDecision: true,
});
const DEFAULT_CLASSES: readonly string[] = ['critical', 'write', 'read', 'test'];
/** The key every instance counts on: one identity for the whole fleet. */
const FLEET = 'fleet';

/**
 * @example
 * const fleet = createFleetShedder({ store: redisStore(redis), capacity: 400, reserve: 0.2 });
 * const d = await fleet.acquire(isCharge ? 'critical' : 'read'); if (!d.allowed) return respond(503);
 * try { await handle(); } finally { await d.lease?.release(); }
 */
export function createFleetShedder(options: FleetShedderOptions): FleetShedder {
  return new Fleet(options);
}

class Fleet implements FleetShedder {
  readonly name: string;
  readonly classes: readonly string[];
  private readonly limiters = new Map<string, ConcurrencyLimiter>();
  private readonly onDecision: ((event: FleetEvent) => void) | undefined;
  private capacity!: number;
  private reserve!: number;
  private sharesByRank: number[] = [];

  constructor(raw: FleetShedderOptions) {
    const options = requireObject(raw, WHERE) as unknown as FleetShedderOptions;
    rejectUnknownOptions(options, KNOWN, WHERE);
    const { capacity, reserve, classes, onDecision, ...rest } = options;
    // The fleet reports its own decisions (with the class); its per-class limiters are not observed.
    this.onDecision = optionalFunction(onDecision, `${WHERE}: onDecision`, '(event) => void');
    this.classes = priorityClasses(classes ?? DEFAULT_CLASSES, `${WHERE}: classes`);
    this.setShares(capacity, reserve ?? 0.2);
    this.name = rest.name ?? 'fleet';
    // One concurrency limiter per class, all counting the same fleet-wide key (same name, same identity).
    for (const [i, priority] of this.classes.entries()) {
      this.limiters.set(priority, createConcurrencyLimiter({ ...rest, name: this.name, limit: this.share(i) }));
    }
  }

  limitFor(priority: string): number {
    return this.share(this.rankOf(priority));
  }

  configure(changes: { capacity?: number; reserve?: number; mode?: LimiterMode }): void {
    rejectUnknownOptions(requireObject(changes, 'configure'), ['capacity', 'reserve', 'mode'], 'configure');
    this.setShares(changes.capacity ?? this.capacity, changes.reserve ?? this.reserve);
    for (const [i, priority] of this.classes.entries()) {
      this.limiters.get(priority)!.configure({ limit: this.share(i), ...(changes.mode === undefined ? {} : { mode: changes.mode }) });
    }
  }

  acquire(priority: string, options?: AcquireOptions): Promise<FleetDecision> {
    // Unobserved, the decision is returned as it comes: no clock read, no extra promise.
    if (this.onDecision === undefined) return this.decide(priority, options);
    return this.observed(priority, options, this.onDecision);
  }

  /** `decide`, timed and reported. A call that throws (an unknown class) decided nothing and is not reported. */
  private async observed(
    priority: string,
    options: AcquireOptions | undefined,
    observer: (event: FleetEvent) => void,
  ): Promise<FleetDecision> {
    const started = performanceNow();
    const decision = await this.decide(priority, options);
    notify(observer, {
      component: 'fleet',
      limiter: this.name,
      operation: 'acquire',
      priority,
      decision,
      durationMs: performanceNow() - started,
    });
    return decision;
  }

  private async decide(priority: string, options: AcquireOptions | undefined): Promise<FleetDecision> {
    const limiter = this.limiters.get(priority);
    if (limiter === undefined) this.rankOf(priority); // throws, naming the classes
    const decision = await limiter!.acquire(FLEET, options);
    const reason = decision.reason === 'concurrency_limited' ? 'shed' : decision.reason;
    return { ...decision, reason, priority };
  }

  private rankOf(priority: string): number {
    const rank = this.classes.indexOf(priority);
    return rank < 0 ? unknownPriorityClass(priority, this.classes, WHERE) : rank;
  }

  /** Class i's share, as computed by `shares()` when the capacity or the reserve was set. */
  private share(rank: number): number {
    return this.sharesByRank[rank]!;
  }

  private setShares(capacity: unknown, reserve: unknown): void {
    if (typeof capacity !== 'number' || !Number.isSafeInteger(capacity) || capacity < 1) {
      throw new SluiceError('INVALID_OPTION', `${WHERE}: capacity must be a positive integer, got ${describe(capacity)}`);
    }
    if (typeof reserve !== 'number' || !(reserve >= 0 && reserve < 1)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${WHERE}: reserve must be a fraction from 0 (no reserve) up to but not including 1, got ${describe(reserve)}`,
      );
    }
    this.capacity = capacity;
    this.reserve = reserve;
    this.sharesByRank = shares(capacity, reserve, this.classes.length);
  }
}

/**
 * Each class's share: the whole capacity for the first, floor((1 − reserve) × capacity) for the last, the floor of
 * the straight line between for the others; at least 1, so that every class can run. Computed exactly, in integers:
 * the reserve is read as the decimal it is written as (0.2 is 2/10, not the binary fraction just above it), so
 * 20 × (1 − 0.2) gives 16, where floating point gives 15.999999999999998 and floors it to 15.
 */
function shares(capacity: number, reserve: number, classes: number): number[] {
  const { numerator, denominator } = decimalFraction(reserve);
  const last = BigInt(Math.max(1, classes - 1));
  const whole = denominator * last;
  const result: number[] = [];
  for (let rank = 0; rank < classes; rank++) {
    // capacity × (1 − reserve × rank ÷ last) = capacity × (denominator × last − numerator × rank) ÷ (denominator × last)
    const share = (BigInt(capacity) * (whole - numerator * BigInt(rank))) / whole;
    result.push(Math.max(1, Number(share)));
  }
  return result;
}

/** A finite non-negative number as the decimal fraction its shortest representation writes (`String(x)`), exactly. */
function decimalFraction(x: number): { numerator: bigint; denominator: bigint } {
  const [mantissa = '0', exponent = '0'] = String(x).split('e');
  const [whole = '0', fraction = ''] = mantissa.split('.');
  const shift = Number(exponent) - fraction.length;
  const digits = BigInt(whole + fraction);
  return shift >= 0
    ? { numerator: digits * 10n ** BigInt(shift), denominator: 1n }
    : { numerator: digits, denominator: 10n ** BigInt(-shift) };
}
