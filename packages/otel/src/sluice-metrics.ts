/**
 * OpenTelemetry metrics for every sluice decision. `sluiceMetrics({ meter })` makes two instruments on the user's
 * Meter and returns the observer to pass as `onDecision` to limiters, concurrency limiters and shedders. The
 * OpenTelemetry API is used for its types only: the Meter comes from the caller, so nothing here imports
 * `@opentelemetry/api` at run time, and an application that does not use this package never loads it.
 *
 * The names follow OpenTelemetry's conventions and ASP.NET Core's rate-limiting metrics, the one rate-limiting
 * precedent in the semantic conventions: a counter of decisions in `{decision}` and a duration histogram in
 * seconds. The identity is never an attribute: one time series per client would be unbounded cardinality.
 */
import type { Attributes, Histogram, Meter, MeterProvider } from '@opentelemetry/api';
import { SluiceError } from '@sluice/core';
import { describeValue, optionNames, rejectUnknownOptions } from '@sluice/core/internal';
import { decisionOutcome, type ObservedEvent } from './outcome.js';
import { addDuration, pendingDurations, replayDurations, type PendingDurations } from './pending-durations.js';

/** The instruments' names, units and attribute keys (the README's table). */
export const METRICS = Object.freeze({
  decisions: Object.freeze({ name: 'sluice.decisions', unit: '{decision}' } as const),
  duration: Object.freeze({ name: 'sluice.decision.duration', unit: 's' } as const),
});

/**
 * Bucket boundaries advised for the duration histogram, in seconds: a memory-store decision takes microseconds,
 * a remote store's one to a few milliseconds, a store timeout 250 ms by default. OpenTelemetry's default
 * boundaries (0 to 10,000, made for milliseconds) would put every decision in the first bucket. A View overrides them.
 */
export const DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]);

export interface SluiceMetricsOptions {
  /** The Meter to create the instruments on, e.g. `metrics.getMeter('my-service')`. Give this or `meterProvider`. */
  meter?: Meter;
  /** A MeterProvider to take a Meter named `@sluice/otel` from. Give this or `meter`. */
  meterProvider?: MeterProvider;
  /**
   * Record `sluice.decision.duration`. A decision's duration is added to an in-process histogram; the SDK's
   * `record()` calls, well over a microsecond each, are made when a reader collects (README, What it costs).
   * @default true
   */
  duration?: boolean;
}

export interface SluiceMetrics {
  /**
   * Records one event: pass it as `onDecision` to `createLimiter`, `createConcurrencyLimiter`, `createFleetShedder`
   * and `createUtilizationShedder` (one SluiceMetrics serves them all; they are told apart by `sluice.component`
   * and `sluice.limiter`).
   */
  readonly onDecision: (event: ObservedEvent) => void;
  /**
   * An observer that records the event, then calls yours: for metrics and your own logging on one `onDecision`.
   * Yours runs even if recording threw; what yours throws is the component's to swallow.
   */
  compose<E extends ObservedEvent>(observer: (event: E) => void): (event: E) => void;
}

const WHERE = 'sluiceMetrics';
const KNOWN = optionNames<SluiceMetricsOptions>({ meter: true, meterProvider: true, duration: true });
const SCOPE = '@sluice/otel';

/**
 * @example
 * const metrics = sluiceMetrics({ meter: otel.metrics.getMeter('api') });
 * const limiter = createLimiter({ store, rules, name: 'api', onDecision: metrics.onDecision });
 */
export function sluiceMetrics(options: SluiceMetricsOptions): SluiceMetrics {
  const { meter, duration: withDuration } = checkOptions(options);
  // The SDK hashes an attribute set on every add() and record() (one record costs several memory-store decisions:
  // the sluiceMetrics rows of `pnpm bench memory`). So decisions are counted here, one tally per attribute
  // set, and handed to an asynchronous counter when a reader collects: the same cumulative sum, exact, for a
  // few Map lookups and an increment per decision. A histogram has no asynchronous form: durations are bucketed here
  // (pending-durations.ts) and replayed into the SDK's histogram from a callback of the counter, which the SDK runs
  // before it reads its synchronous instruments, so they land in that collection.
  const tallies: Branch = new Map();
  const all: Tally[] = [];
  const durations: PendingDurations[] = [];
  const decisions = meter.createObservableCounter(METRICS.decisions.name, {
    description: 'Decisions made by sluice limiters, concurrency limiters and load shedders, by outcome.',
    unit: METRICS.decisions.unit,
  });
  const duration: Histogram | undefined = withDuration
    ? meter.createHistogram(METRICS.duration.name, {
        description: 'Time a sluice decision took, from the call to its answer, store round trip included.',
        unit: METRICS.duration.unit,
        advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
      })
    : undefined;
  decisions.addCallback((result) => {
    for (const tally of all) result.observe(tally.count, tally.attributes);
  });
  // A callback of its own, observing nothing: if a long replay outlasts the reader's timeout, the SDK drops what
  // this callback observed, and the counts observed above still go out.
  if (duration !== undefined) decisions.addCallback(() => replayDurations(durations, duration, DURATION_BUCKETS));

  const onDecision = (event: ObservedEvent): void => {
    const { decision } = event;
    const component = 'component' in event ? event.component : 'limiter';
    const scope = 'rule' in decision ? decision.rule : 'priority' in event ? event.priority : undefined;
    // A tree of Maps, one level per part of the attribute set, rather than one joined string key: a few lookups of
    // strings the components already hold, no string built per decision (the joined key cost about 200 ns).
    const byReason = branch(branch(branch(branch(tallies, component), event.limiter), event.operation), scope ?? '');
    let flags = byReason.get(decision.reason) as Slots | undefined;
    if (flags === undefined) byReason.set(decision.reason, (flags = [undefined, undefined, undefined, undefined]));
    const slot = (decision.degraded === true ? 2 : 0) + (decision.allowed ? 1 : 0);
    let tally = flags[slot];
    if (tally === undefined) {
      tally = newTally(event, component, scope);
      flags[slot] = tally;
      all.push(tally);
      durations.push(tally.durations);
    }
    tally.count++;
    if (duration !== undefined) addDuration(tally.durations, DURATION_BUCKETS, event.durationMs / 1000);
  };
  return {
    onDecision,
    compose<E extends ObservedEvent>(observer: (event: E) => void): (event: E) => void {
      if (typeof observer !== 'function') {
        throw new SluiceError(
          'INVALID_OPTION',
          `${WHERE}: compose takes your observer, a function (event) => void, got ${describeValue(observer)}`,
        );
      }
      return (event: E) => {
        try {
          onDecision(event);
        } finally {
          observer(event);
        }
      };
    },
  };
}

/** component → name → operation → rule or class → reason → [degraded × allowed]. */
type Branch = Map<string, Branch | Slots>;
type Slots = (Tally | undefined)[];

function branch(parent: Branch, key: string): Branch {
  let child = parent.get(key) as Branch | undefined;
  if (child === undefined) parent.set(key, (child = new Map()));
  return child;
}

/**
 * One attribute set's count and pending durations, and the attributes, built once when the set is first seen.
 * Several tallies share one set of duration attributes (they differ in reason or rule); the SDK adds their
 * durations up on one point, as it did when each was recorded under equal attributes.
 */
interface Tally {
  count: number;
  readonly attributes: Attributes;
  readonly durations: PendingDurations;
}

/**
 * The attributes of one kind of event. Bounded by construction: component, name, operation, rule id and priority
 * class are set in code, outcome and reason are enumerations. Never the identity.
 */
function newTally(event: ObservedEvent, component: string, scope: string | undefined): Tally {
  const outcome = decisionOutcome(event);
  const durationAttributes: Attributes = {
    'sluice.component': component,
    'sluice.limiter': event.limiter,
    'sluice.operation': event.operation,
    'sluice.outcome': outcome,
  };
  const attributes: Attributes = {
    ...durationAttributes,
    'sluice.reason': event.decision.reason,
    'sluice.allowed': event.decision.allowed,
  };
  if (scope !== undefined) attributes['component' in event ? 'sluice.priority' : 'sluice.rule'] = scope;
  return { count: 0, attributes, durations: pendingDurations(durationAttributes, DURATION_BUCKETS) };
}

function checkOptions(options: SluiceMetricsOptions): { meter: Meter; duration: boolean } {
  const meter = meterOf(options);
  const duration = options.duration ?? true;
  if (typeof duration !== 'boolean') {
    throw new SluiceError('INVALID_OPTION', `${WHERE}: duration must be true or false, got ${describeValue(duration)}`);
  }
  return { meter, duration };
}

function meterOf(options: SluiceMetricsOptions): Meter {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: options must be an object with a meter or a meterProvider, got ${describeValue(options)}`,
    );
  }
  rejectUnknownOptions(options, KNOWN, WHERE);
  const { meter, meterProvider } = options;
  if ((meter === undefined) === (meterProvider === undefined)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: give exactly one of meter (an OpenTelemetry Meter) and meterProvider (a MeterProvider), got ${meter === undefined ? 'neither' : 'both'}`,
    );
  }
  if (meterProvider !== undefined) {
    if (typeof meterProvider !== 'object' || meterProvider === null || typeof meterProvider.getMeter !== 'function') {
      throw new SluiceError(
        'INVALID_OPTION',
        `${WHERE}: meterProvider must be an OpenTelemetry MeterProvider (with getMeter), got ${describeValue(meterProvider)}`,
      );
    }
    return checkMeter(meterProvider.getMeter(SCOPE), 'meterProvider.getMeter() must return');
  }
  return checkMeter(meter, 'meter must be');
}

function checkMeter(meter: unknown, field: string): Meter {
  const candidate = meter as Partial<Meter> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.createObservableCounter !== 'function' ||
    typeof candidate.createHistogram !== 'function'
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: ${field} an OpenTelemetry Meter (with createObservableCounter and createHistogram), got ${describeValue(meter)}`,
    );
  }
  return meter as Meter;
}
