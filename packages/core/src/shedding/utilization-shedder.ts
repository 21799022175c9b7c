/**
 * The worker-utilization load shedder (the "Worker utilization load shedder" of the article 'Scaling your API with
 * rate limiters'): the last line of defence of one process. It reads how busy the process is, and when that stays
 * high it sheds requests of the least important class first, with a probability that grows slowly, then the next
 * class, until only the first class (critical) is left; when the process recovers it brings traffic back just as
 * slowly. Refusals are 503s (the server is overloaded), never 429s (the client is not at fault).
 *
 * The shedding amount `a` moves, at each utilization sample u, by the time since the last sample times a derivative:
 * - u < goodBelow: a falls, at (u / goodBelow − 1) / rampUp per second (faster the idler the process);
 * - goodBelow ≤ u < badAbove: a dead zone, a stays (no flapping around one threshold);
 * - u ≥ badAbove: a rises, at (u − badAbove) / (1 − badAbove) / rampUp per second.
 * `a` is kept in [−delay / rampUp, 1]: from rest it takes `delay` of full overload before anything is shed, and no
 * more than max(delay, sampleEvery) of elapsed time counts for one update (a stalled clock or a long gap cannot
 * jump it).
 * With k sheddable classes (all but the first), class j counted from the least important (j = 0) is dropped with
 * probability clamp(a × k − j, 0, 1): test traffic goes first, and at a = 1 everything but critical is shed.
 */
import { durationOption, type Duration } from '../shared/duration.js';
import { createEventLoopSignal, type EventLoopSignal } from './event-loop-signal.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { notify, performanceNow } from '../limiter/observe.js';
import type { LimiterMode } from '../shared/types.js';
import {
  clockOption,
  modeOption,
  nameOption,
  optionalFunction,
  optionNames,
  priorityClasses,
  rejectUnknownOptions,
  requireObject,
  unknownPriorityClass,
} from '../shared/validate.js';

/** The article's four classes, from most to least important. */
const DEFAULT_PRIORITY_CLASSES: readonly string[] = ['critical', 'write', 'read', 'test'];

export interface UtilizationShedderOptions {
  /**
   * How busy the process is, from 0 (idle) to 1 (saturated); called at most once per `sampleEvery`. Default: the
   * event loop's utilization and delay (`createEventLoopSignal()`, Node and Bun only; elsewhere pass your own).
   */
  signal?: () => number;
  /** Priority classes, most important first; the first is never shed. @default ['critical', 'write', 'read', 'test'] */
  classes?: readonly string[];
  /** Utilization below which shedding decreases. @default 0.7 */
  goodBelow?: number;
  /** Utilization from which shedding increases. @default 0.8 */
  badAbove?: number;
  /** Time, at full overload, from shedding nothing to shedding everything but the first class. @default '120s' */
  rampUp?: Duration;
  /** Time of full overload, from rest, before the first request is shed. @default '28s' */
  delay?: Duration;
  /** How often the signal is read and the shedding amount updated. @default '1s' */
  sampleEvery?: Duration;
  /** `shadow` decides and reports but never sheds; `off` never reads the signal and admits everything. @default 'enforce' */
  mode?: LimiterMode;
  /** Epoch ms. @default Date.now */
  clock?: () => number;
  /** A number in [0, 1), for the drop draw. @default Math.random */
  random?: () => number;
  /** Names the shedder in its events (metrics tell shedders apart by it). @default 'utilization' */
  name?: string;
  /**
   * Called after every `check` with what was decided and how long it took, the signal's read included (metrics,
   * logs; see `@sluice/otel`), as `createLimiter`'s `onDecision`. It runs inline: keep it cheap. An exception it
   * throws is swallowed. Unset, it costs nothing.
   */
  onDecision?: (event: ShedEvent) => void;
}

/** What a utilization shedder's `onDecision` receives. */
export interface ShedEvent {
  /** Which kind of component decided: one observer can take the events of limiters, concurrency limiters and shedders. */
  readonly component: 'utilization';
  /** The shedder's name (its `name` option, 'utilization' by default). */
  readonly limiter: string;
  readonly operation: 'check';
  /** The request's class. There is no identity: the shedder decides for the whole process. */
  readonly priority: string;
  readonly decision: ShedDecision;
  /** From the call to its answer, in ms (fractional where the runtime's performance.now() is), the signal's read included. */
  readonly durationMs: number;
}

export interface ShedDecision {
  readonly allowed: boolean;
  /** `ok`, `shed` (503), `shadow` (would have been shed), `disabled` (mode off). */
  readonly reason: 'ok' | 'shed' | 'shadow' | 'disabled';
  /** The request's class. */
  readonly priority: string;
  /** Probability this class was dropped with, from 0 to 1. */
  readonly dropChance: number;
  /** The shedding amount at the time: below 0 is rest, 1 sheds everything but the first class. */
  readonly amount: number;
  /** The last utilization read (NaN before the first sample). */
  readonly utilization: number;
  /** Milliseconds before a retry is worth it: the next sample, 0 when allowed. */
  readonly retryAfter: number;
  /** The decision's time, epoch ms. */
  readonly now: number;
}

export interface UtilizationShedder {
  readonly name: string;
  /** Decides one request of class `priority` (one of `classes`; an unknown class is an error, not a silent pass). */
  check(priority: string): ShedDecision;
  /** The shedding amount now (without sampling). */
  readonly amount: number;
  readonly mode: LimiterMode;
  readonly classes: readonly string[];
  /** Changes the mode at run time (dark launch, kill switch). */
  configure(changes: { mode?: LimiterMode }): void;
  /** Stops the default signal's probe timer, if any. */
  close(): void;
}

const KNOWN = optionNames<UtilizationShedderOptions>({
  signal: true,
  classes: true,
  goodBelow: true,
  badAbove: true,
  rampUp: true,
  delay: true,
  sampleEvery: true,
  mode: true,
  clock: true,
  random: true,
  name: true,
  onDecision: true,
});
const WHERE = 'createUtilizationShedder';

/**
 * @example
 * const shedder = createUtilizationShedder({ classes: ['critical', 'write', 'read', 'test'] });
 * const d = shedder.check(req.method === 'GET' ? 'read' : 'write'); if (!d.allowed) respond(503, d.retryAfter);
 */
export function createUtilizationShedder(options: UtilizationShedderOptions = {}): UtilizationShedder {
  return new Shedder(options);
}

class Shedder implements UtilizationShedder {
  readonly name: string;
  readonly classes: readonly string[];
  private readonly rank = new Map<string, number>();
  private readonly signal: () => number;
  private readonly ownSignal: (EventLoopSignal & (() => number)) | undefined;
  private readonly goodBelow: number;
  private readonly badAbove: number;
  private readonly rampUpMs: number;
  private readonly delayMs: number;
  private readonly sampleEveryMs: number;
  private readonly clock: () => number;
  private readonly random: () => number;
  private readonly onDecision: ((event: ShedEvent) => void) | undefined;
  private readonly rest: number;
  /** The most time one update counts: `delay` (as in the article), or one sample period when that is longer. */
  private readonly maxStepMs: number;
  private current: number;
  private lastUpdate: number | undefined;
  private lastSample: number | undefined;
  private utilization = Number.NaN;
  private currentMode: LimiterMode = 'enforce';

  constructor(raw: UtilizationShedderOptions) {
    const options = requireObject(raw, WHERE) as UtilizationShedderOptions;
    rejectUnknownOptions(options, KNOWN, WHERE);
    this.classes = priorityClasses(options.classes ?? DEFAULT_PRIORITY_CLASSES, `${WHERE}: classes`);
    this.classes.forEach((name, i) => this.rank.set(name, i));
    this.goodBelow = fraction(options.goodBelow ?? 0.7, 'goodBelow');
    this.badAbove = fraction(options.badAbove ?? 0.8, 'badAbove');
    if (!(this.goodBelow > 0 && this.goodBelow <= this.badAbove && this.badAbove < 1)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${WHERE}: need 0 < goodBelow <= badAbove < 1, got goodBelow ${this.goodBelow} and badAbove ${this.badAbove}`,
      );
    }
    this.rampUpMs = durationOption(options.rampUp ?? 120_000, `${WHERE}: rampUp`, { min: 1 });
    this.delayMs = durationOption(options.delay ?? 28_000, `${WHERE}: delay`, { min: 0 });
    this.sampleEveryMs = durationOption(options.sampleEvery ?? 1000, `${WHERE}: sampleEvery`, { min: 1 });
    this.clock = clockOption(options.clock, `${WHERE}: clock`);
    this.random = callback(options.random, 'random', '() => a number in [0, 1)') ?? Math.random;
    this.name = nameOption(options.name ?? 'utilization', `${WHERE}: name`);
    this.onDecision = callback(options.onDecision, 'onDecision', '(event) => void');
    const signal = callback(options.signal, 'signal', '() => utilization from 0 to 1');
    if (signal === undefined) {
      this.ownSignal = createEventLoopSignal();
      this.signal = this.ownSignal;
    } else {
      this.ownSignal = undefined;
      this.signal = signal;
    }
    this.rest = this.delayMs === 0 ? 0 : -this.delayMs / this.rampUpMs;
    this.maxStepMs = Math.max(this.delayMs, this.sampleEveryMs);
    this.current = this.rest;
    this.configure({ mode: options.mode ?? 'enforce' });
  }

  get amount(): number {
    return this.current;
  }

  get mode(): LimiterMode {
    return this.currentMode;
  }

  configure(changes: { mode?: LimiterMode }): void {
    rejectUnknownOptions(requireObject(changes, 'configure'), ['mode'], 'configure');
    this.currentMode = modeOption(changes.mode ?? this.currentMode, `${WHERE}: mode`);
  }

  close(): void {
    this.ownSignal?.close();
  }

  check(priority: string): ShedDecision {
    // Unobserved, no clock is read and no event is built.
    if (this.onDecision === undefined) return this.decide(priority);
    const started = performanceNow();
    const decision = this.decide(priority);
    notify(this.onDecision, {
      component: 'utilization',
      limiter: this.name,
      operation: 'check',
      priority,
      decision,
      durationMs: performanceNow() - started,
    });
    return decision;
  }

  private decide(priority: string): ShedDecision {
    const rank = this.rank.get(priority) ?? unknownPriorityClass(priority, this.classes, WHERE);
    const now = this.clock();
    if (this.currentMode === 'off') return this.decision(true, 'disabled', priority, 0, now);
    this.update(now);
    const chance = this.dropChance(rank);
    const dropped = chance > 0 && (chance >= 1 || this.random() < chance);
    if (!dropped) return this.decision(true, 'ok', priority, chance, now);
    return this.decision(this.currentMode === 'shadow', this.currentMode === 'shadow' ? 'shadow' : 'shed', priority, chance, now);
  }

  /** Probability of dropping a class of this rank: the least important class goes first, the first class never. */
  private dropChance(rank: number): number {
    const sheddable = this.classes.length - 1;
    if (rank === 0 || sheddable === 0) return 0;
    const fromLeast = this.classes.length - 1 - rank;
    return clamp(this.current * sheddable - fromLeast, 0, 1);
  }

  /** Reads the signal at most once per sampleEvery and moves the amount by the time since the last move. */
  private update(now: number): void {
    if (this.lastSample !== undefined && now - this.lastSample < this.sampleEveryMs && now >= this.lastSample) return;
    const utilization = this.signal();
    if (typeof utilization !== 'number' || Number.isNaN(utilization)) {
      throw new SluiceError('INVALID_OPTION', `${WHERE}: signal must return a number from 0 to 1, got ${describe(utilization)}`);
    }
    // As in the article: the new sample sets the derivative, which moves the amount by the time since the last move;
    // a clock that stepped back counts as no time, and no more than max(delay, sampleEvery) is counted at once.
    this.utilization = clamp(utilization, 0, 1);
    const derivative = this.derivativeFor(this.utilization);
    if (this.lastUpdate !== undefined) {
      const elapsed = clamp(now - this.lastUpdate, 0, this.maxStepMs);
      this.current = clamp(this.current + elapsed * derivative, this.rest, 1);
    }
    this.lastUpdate = now;
    this.lastSample = now;
  }

  /** Change of the amount per ms for a utilization, from −1 / rampUp (idle) to +1 / rampUp (saturated). */
  private derivativeFor(u: number): number {
    let pressure = 0;
    if (u < this.goodBelow) pressure = u / this.goodBelow - 1;
    else if (u >= this.badAbove) pressure = (u - this.badAbove) / (1 - this.badAbove);
    return clamp(pressure, -1, 1) / this.rampUpMs;
  }

  private decision(allowed: boolean, reason: ShedDecision['reason'], priority: string, dropChance: number, now: number): ShedDecision {
    return {
      allowed,
      reason,
      priority,
      dropChance,
      amount: this.current,
      utilization: this.utilization,
      retryAfter: reason === 'shed' ? this.sampleEveryMs : 0,
      now,
    };
  }
}

function clamp(value: number, min: number, max: number): number {
  return value < min ? min : value > max ? max : value;
}

function fraction(value: unknown, field: string): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw new SluiceError('INVALID_OPTION', `${WHERE}: ${field} must be a number from 0 to 1, got ${describe(value)}`);
  }
  return value;
}

function callback<T>(value: T | undefined, field: string, shape: string): T | undefined {
  return optionalFunction(value, `${WHERE}: ${field}`, shape);
}
