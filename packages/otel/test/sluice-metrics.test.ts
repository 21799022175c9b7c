/**
 * sluiceMetrics' own contract, event by event on a real SDK pipeline: the instruments' names, units and buckets,
 * the attributes of each kind of component, durations in seconds, composing with the user's observer, and options
 * refused with the field named. The counts over generated mixes of decisions are in counts.property.test.ts.
 */
import type { DecisionEvent } from '@sluice/core';
import { afterEach, describe, expect, test } from 'vitest';
import { DURATION_BUCKETS, sluiceMetrics, type ComponentEvent, type ObservedEvent } from '../src/index.js';
import { sdkPipeline } from './support.js';

const pipelines: ReturnType<typeof sdkPipeline>[] = [];
function pipeline() {
  const made = sdkPipeline();
  pipelines.push(made);
  return made;
}

afterEach(async () => {
  await Promise.all(pipelines.splice(0).map((p) => p.shutdown()));
});

/** A limiter's event as createLimiter hands it over (the decision trimmed to what is read; the rest is not). */
function limiterEvent(decision: Partial<DecisionEvent['decision']>, durationMs = 1): DecisionEvent {
  return {
    limiter: 'api',
    operation: 'limit',
    identity: 'user-42',
    durationMs,
    decision: { allowed: true, reason: 'ok', degraded: false, rule: 'per-second', ...decision } as DecisionEvent['decision'],
  };
}

describe('sluiceMetrics', () => {
  test('a limiter event: sluice.decisions +1 and its duration in seconds, with component, name, rule, operation, outcome, reason, allowed; no identity', async () => {
    const otel = pipeline();
    const metrics = sluiceMetrics({ meter: otel.meter });
    metrics.onDecision(limiterEvent({ allowed: false, reason: 'rate_limited' }, 2.5));
    const exported = await otel.collect();
    const counter = exported.get('sluice.decisions')!;
    expect(counter.unit).toBe('{decision}');
    expect(counter.points).toHaveLength(1);
    expect(counter.points[0]!.value).toBe(1);
    expect(counter.points[0]!.attributes).toEqual({
      'sluice.component': 'limiter',
      'sluice.limiter': 'api',
      'sluice.rule': 'per-second',
      'sluice.operation': 'limit',
      'sluice.outcome': 'limited',
      'sluice.reason': 'rate_limited',
      'sluice.allowed': false,
    });
    const histogram = exported.get('sluice.decision.duration')!;
    expect(histogram.unit).toBe('s');
    const value = histogram.points[0]!.value as { count: number; sum: number; buckets: { boundaries: number[] } };
    expect(value.count).toBe(1);
    expect(value.sum).toBeCloseTo(0.0025, 12);
    // Durations carry the attributes that say whose and what kind: fewer than the counter's, which the SDK hashes per record.
    expect(histogram.points[0]!.attributes).toEqual({
      'sluice.component': 'limiter',
      'sluice.limiter': 'api',
      'sluice.operation': 'limit',
      'sluice.outcome': 'limited',
    });
    // The advised boundaries reach the SDK: microseconds to a second, not its millisecond-sized defaults.
    expect(value.buckets.boundaries).toEqual(DURATION_BUCKETS);
  });

  test("a shedder's event carries its class (sluice.priority) and no rule; a concurrency limiter's neither", async () => {
    const otel = pipeline();
    const metrics = sluiceMetrics({ meter: otel.meter });
    const shed: ComponentEvent = {
      component: 'fleet',
      limiter: 'fleet',
      operation: 'acquire',
      priority: 'read',
      durationMs: 3,
      decision: { allowed: false, reason: 'shed', degraded: false },
    };
    const lease: ComponentEvent = {
      component: 'concurrency',
      limiter: 'uploads',
      operation: 'acquire',
      durationMs: 1,
      decision: { allowed: true, reason: 'store_unavailable', degraded: true },
    };
    metrics.onDecision(shed);
    metrics.onDecision(lease);
    const points = (await otel.collect()).get('sluice.decisions')!.points.map((p) => p.attributes);
    expect(points).toContainEqual({
      'sluice.component': 'fleet',
      'sluice.limiter': 'fleet',
      'sluice.priority': 'read',
      'sluice.operation': 'acquire',
      'sluice.outcome': 'shed',
      'sluice.reason': 'shed',
      'sluice.allowed': false,
    });
    expect(points).toContainEqual({
      'sluice.component': 'concurrency',
      'sluice.limiter': 'uploads',
      'sluice.operation': 'acquire',
      'sluice.outcome': 'degraded',
      'sluice.reason': 'store_unavailable',
      'sluice.allowed': true,
    });
  });

  test('repeated events of one kind add up on one point; duration: false records no histogram and counts the same', async () => {
    const otel = pipeline();
    const counted = sluiceMetrics({ meter: otel.meter, duration: false });
    for (let i = 0; i < 5; i++) counted.onDecision(limiterEvent({ reason: 'shadow' }));
    counted.onDecision(limiterEvent({ reason: 'ok' }));
    const exported = await otel.collect();
    expect(exported.get('sluice.decision.duration')).toBeUndefined();
    const points = exported.get('sluice.decisions')!.points.map((p) => [p.attributes['sluice.outcome'], p.value]);
    expect(points.sort()).toEqual([
      ['allowed', 1],
      ['shadow_limited', 5],
    ]);
  });

  test('a meterProvider gives the meter of scope @sluice/otel', async () => {
    const otel = pipeline();
    sluiceMetrics({ meterProvider: otel.provider }).onDecision(limiterEvent({}));
    await otel.collect();
    expect(otel.scopes()).toContain('@sluice/otel');
  });

  test('compose: the event is recorded, then yours is called; yours still runs when recording throws, and what yours throws is not swallowed here', async () => {
    const otel = pipeline();
    const metrics = sluiceMetrics({ meter: otel.meter });
    const mine: ObservedEvent[] = [];
    const both = metrics.compose((event: DecisionEvent) => void mine.push(event));
    const event = limiterEvent({});
    both(event);
    expect(mine).toEqual([event]);
    expect((await otel.collect()).get('sluice.decisions')!.points[0]!.value).toBe(1);

    // A broken event makes recording throw (no decision): the user's observer is still called, the error goes on to the component.
    expect(() => both({ limiter: 'api' } as unknown as DecisionEvent)).toThrow();
    expect(mine).toHaveLength(2);
    const failing = metrics.compose(() => {
      throw new Error('mine');
    });
    expect(() => failing(event)).toThrow('mine');
    expect(() => metrics.compose('log' as never)).toThrow(/sluiceMetrics: compose takes your observer, a function \(event\) => void, got/);
  });

  test('options: exactly one of meter and meterProvider, each of the right shape; unknown options named', () => {
    const { meter, provider } = pipeline();
    expect(() => sluiceMetrics({} as never)).toThrow(/sluiceMetrics: give exactly one of meter .* and meterProvider .*, got neither/);
    expect(() => sluiceMetrics({ meter, meterProvider: provider })).toThrow(/got both/);
    expect(() => sluiceMetrics({ meter: {} as never })).toThrow(
      /sluiceMetrics: meter must be an OpenTelemetry Meter \(with createObservableCounter and createHistogram\), got/,
    );
    expect(() => sluiceMetrics({ meterProvider: { getMeter: () => null } as never })).toThrow(
      /sluiceMetrics: meterProvider.getMeter\(\) must return an OpenTelemetry Meter/,
    );
    expect(() => sluiceMetrics({ meterProvider: 'x' as never })).toThrow(
      /sluiceMetrics: meterProvider must be an OpenTelemetry MeterProvider/,
    );
    expect(() => sluiceMetrics({ meter, histogram: false } as never)).toThrow(
      /sluiceMetrics: unknown option "histogram"; accepted options are meter, meterProvider, duration/,
    );
    expect(() => sluiceMetrics({ meter, duration: 'no' as never })).toThrow(/sluiceMetrics: duration must be true or false, got/);
    expect(() => sluiceMetrics(undefined as never)).toThrow(/sluiceMetrics: options must be an object/);
  });
});
