/**
 * The duration histogram is aggregated in process and handed to the SDK when a reader collects (pending-durations.ts).
 * What an exporter receives must not change: these tests feed the same decisions to sluiceMetrics and to a plain SDK
 * histogram recording each duration as it comes (what sluiceMetrics did before), collect both after each batch,
 * and require the same points: attributes, count, bucket counts, minimum and maximum equal, sums equal to rounding.
 * Durations come from the events, or from a fake `performance.now()` when real components make the decisions.
 */
import type { Meter } from '@opentelemetry/api';
import { AggregationTemporality, type DataPoint, type Histogram as HistogramValue } from '@opentelemetry/sdk-metrics';
import { createLimiter, tokenBucket, type DecisionEvent } from '@sluice/core';
import { createFleetShedder } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { DURATION_BUCKETS, METRICS, decisionOutcome, sluiceMetrics, type ComponentEvent, type ObservedEvent } from '../src/index.js';
import { sdkPipeline } from './support.js';

const pipelines: ReturnType<typeof sdkPipeline>[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(pipelines.splice(0).map((p) => p.shutdown()));
});

/** sluiceMetrics on one pipeline, and on another the histogram recorded per decision, as the SDK's own reference. */
function sideBySide(temporality: AggregationTemporality) {
  const ours = sdkPipeline(temporality);
  const reference = sdkPipeline(temporality);
  pipelines.push(ours, reference);
  const metrics = sluiceMetrics({ meter: ours.meter });
  const direct = reference.meter.createHistogram(METRICS.duration.name, {
    unit: METRICS.duration.unit,
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
  });
  const recordDirectly = (event: ObservedEvent) =>
    direct.record(event.durationMs / 1000, {
      'sluice.component': 'component' in event ? event.component : 'limiter',
      'sluice.limiter': event.limiter,
      'sluice.operation': event.operation,
      'sluice.outcome': decisionOutcome(event),
    });
  /** Collects both and requires the same histogram points; returns ours, by attribute set. */
  const compare = async () => {
    const mine = histogramPoints(await ours.collect());
    const theirs = histogramPoints(await reference.collect());
    expect([...mine.keys()].sort()).toEqual([...theirs.keys()].sort());
    for (const [key, expected] of theirs) {
      const actual = mine.get(key)!;
      expect({ ...actual, sum: 0 }, key).toEqual({ ...expected, sum: 0 });
      expect(Math.abs(actual.sum - expected.sum), key).toBeLessThanOrEqual(1e-9 * Math.max(1, expected.sum));
    }
    return mine;
  };
  return { metrics, recordDirectly, compare };
}

type Exported = Awaited<ReturnType<ReturnType<typeof sdkPipeline>['collect']>>;

function histogramPoints(exported: Exported) {
  const points = new Map<string, { count: number; sum: number; min?: number; max?: number; counts: number[]; boundaries: number[] }>();
  for (const point of (exported.get(METRICS.duration.name)?.points ?? []) as DataPoint<HistogramValue>[]) {
    const { count, sum, min, max, buckets } = point.value;
    points.set(JSON.stringify(Object.entries(point.attributes).sort()), {
      count,
      sum: sum!,
      min,
      max,
      counts: buckets.counts,
      boundaries: buckets.boundaries,
    });
  }
  return points;
}

function limiterEvent(allowed: boolean, durationMs: number): DecisionEvent {
  return {
    limiter: 'api',
    operation: 'limit',
    identity: 'user-42',
    durationMs,
    decision: { allowed, reason: allowed ? 'ok' : 'rate_limited', degraded: false, rule: 'per-second' } as DecisionEvent['decision'],
  };
}

function shedEvent(durationMs: number): ComponentEvent {
  return {
    component: 'fleet',
    limiter: 'fleet',
    operation: 'acquire',
    priority: 'read',
    durationMs,
    decision: { allowed: false, reason: 'shed', degraded: false },
  };
}

/** A deterministic spread of durations in milliseconds, from under 5 µs to over a second (Park–Miller generator). */
function durationsMs(count: number, seed: number): number[] {
  let state = seed;
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    state = (state * 48_271) % 2_147_483_647;
    // 10^-3.5 ms to 10^3.5 ms: every bucket and both ends.
    out.push(10 ** ((state / 2_147_483_647) * 7 - 3.5));
  }
  return out;
}

/** Durations on the bounds themselves, zero, and one above the last bound: the edges of the bucket rule. */
const EDGES_MS = [0, ...DURATION_BUCKETS.map((seconds) => seconds * 1000), 2000];

describe.each([
  ['cumulative', AggregationTemporality.CUMULATIVE],
  ['delta', AggregationTemporality.DELTA],
])('the duration histogram, %s temporality', (_, temporality) => {
  test('a known sequence: count, sum, bucket counts, minimum and maximum, as recorded', async () => {
    const { metrics, recordDirectly, compare } = sideBySide(temporality);
    // 0.002 ms and 0.004 ms in the first bucket (up to 5 µs), 1 ms on its bound (the 1 ms bucket), 3 ms in (2.5, 5] ms.
    for (const ms of [0.002, 0.004, 1, 3, 3, 3]) {
      metrics.onDecision(limiterEvent(true, ms));
      recordDirectly(limiterEvent(true, ms));
    }
    const point = [...(await compare()).values()][0]!;
    expect(point.count).toBe(6);
    expect(point.sum).toBeCloseTo(0.010_006, 12);
    expect(point.min).toBeCloseTo(0.000_002, 15);
    expect(point.max).toBeCloseTo(0.003, 15);
    const expected = new Array<number>(DURATION_BUCKETS.length + 1).fill(0);
    expected[0] = 2;
    expected[DURATION_BUCKETS.indexOf(0.001)] = 1;
    expected[DURATION_BUCKETS.indexOf(0.005)] = 3;
    expect(point.counts).toEqual(expected);
  });

  test('collection after collection, several attribute sets, one of them idle, bounds and thousands of equal values', async () => {
    const { metrics, recordDirectly, compare } = sideBySide(temporality);
    const observe = (event: ObservedEvent) => {
      metrics.onDecision(event);
      recordDirectly(event);
    };
    durationsMs(3000, 7).forEach((ms, i) => observe(i % 3 === 0 ? shedEvent(ms) : limiterEvent(i % 3 === 1, ms)));
    await compare();
    // Only the limiter's allowed decisions now: the others' points stay as they were (cumulative) or go (delta).
    // Each bound twice beside values inside its buckets: a bound counted in the bucket above would be replayed there.
    // A negative duration is dropped by the SDK's histogram, and counted by the counter alone.
    for (const ms of [...EDGES_MS, ...EDGES_MS, -1, ...durationsMs(500, 11)]) observe(limiterEvent(true, ms));
    await compare();
    // More equal values in one bucket than one slice of the replay (it yields to the event loop between slices).
    for (let i = 0; i < 5000; i++) observe(limiterEvent(false, 0.3));
    for (const ms of EDGES_MS) observe(shedEvent(ms));
    await compare();
    // A collection with nothing new.
    await compare();
  });

  test('a collection after many decisions lets the event loop run while it hands their durations to the SDK', async () => {
    const otel = sdkPipeline(temporality);
    pipelines.push(otel);
    // The SDK's histogram, counting the records it is given; the first one sets a timer that notes how many had come.
    let records = 0;
    let recordsWhenTimerRan: number | undefined;
    const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };
    const meter = Object.create(otel.meter) as Meter;
    meter.createHistogram = (name, options) => {
      const histogram = otel.meter.createHistogram(name, options);
      return {
        record(value, attributes) {
          if (records++ === 0) timers.setTimeout(() => (recordsWhenTimerRan = records), 0);
          histogram.record(value, attributes);
        },
      };
    };
    const metrics = sluiceMetrics({ meter });
    for (let i = 0; i < 20_000; i++) metrics.onDecision(limiterEvent(true, 0.01 + (i % 7) / 1000));
    expect(records).toBe(0);
    const point = [...histogramPoints(await otel.collect()).values()][0]!;
    expect(point.count).toBe(20_000);
    expect(records).toBe(20_000);
    // The timer ran in the middle of the replay, not after it: the replay yielded.
    expect(recordsWhenTimerRan).toBeGreaterThan(0);
    expect(recordsWhenTimerRan).toBeLessThan(20_000);
  });

  test('real components on a fake clock: the exported histogram matches the durations the events carried', async () => {
    // The components time a decision with performance.now(); a fake one moves on by a scripted step on every read.
    const steps = durationsMs(97, 5);
    let now = 1_000;
    let reads = 0;
    vi.spyOn((globalThis as unknown as { performance: { now(): number } }).performance, 'now').mockImplementation(
      () => (now += steps[reads++ % steps.length]!),
    );
    const { metrics, recordDirectly, compare } = sideBySide(temporality);
    const observer = metrics.compose(recordDirectly);
    const limiter = createLimiter({
      store: memoryStore(),
      name: 'api',
      rules: tokenBucket({ id: 'per-second', capacity: 5, refillRate: 5, interval: '1s' }),
      clock: () => 1_700_000_000_000,
      onDecision: observer,
    });
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 3, onDecision: observer });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 40; i++) limiter.limitSync(`user-${i % 4}`);
      for (let i = 0; i < 10; i++) await fleet.acquire('read');
      await compare();
    }
    expect(reads).toBeGreaterThan(0);
  });
});
