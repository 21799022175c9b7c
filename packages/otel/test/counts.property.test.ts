/**
 * The proof of the metrics: the OpenTelemetry SDK's exported counts equal the decisions made. fast-check generates a
 * mix of calls on real components over a real memory store (@sluice/memory): limiters in enforce, shadow and off
 * modes, a limiter whose store goes down and comes back (degraded), a concurrency limiter, a fleet shedder and a
 * utilization shedder (shed). The test files each decision under the outcome it expects from what it set up (which
 * component, which mode, whether the store was down) and what the caller was told (allowed or not), then compares
 * that tally, per outcome, component, limiter, rule and class, with what a MeterProvider exported through an
 * in-memory exporter; the duration histogram must count every decision once.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Decision, type LimiterMode, type Store } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder, createUtilizationShedder } from '@sluice/core/shedding';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { memoryStore } from '@sluice/memory';
import { sluiceMetrics, type DecisionOutcome } from '../src/index.js';
import { counterValue, histogramCount, sdkPipeline } from './support.js';

const CLOCK_START = 1_700_000_000_000;
const IDENTITIES = ['alice', 'bob', 'carol', '2001:db8::7'];
const CLASSES = ['critical', 'write', 'read', 'test'];

/** A memory store in front of which an outage can be switched on: every call then rejects, as a dead Redis's would. */
function outageStore() {
  const inner = memoryStore();
  const state = { down: false };
  const store: Store = {
    capabilities: { ...inner.capabilities, synchronous: false },
    limit: (request: LimitRequest): Promise<LimitResult> =>
      state.down ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve(inner.limit(request)),
    reset: (key, ruleIds) => inner.reset(key, ruleIds),
  };
  return { store, state };
}

const limited = fc.constantFrom('api', 'search');
const command = fc.oneof(
  fc.record({
    kind: fc.constant('limit' as const),
    limiter: limited,
    identity: fc.constantFrom(...IDENTITIES),
    cost: fc.integer({ min: 0, max: 3 }),
    sync: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('mode' as const),
    target: fc.constantFrom('api', 'search', 'fleet', 'worker'),
    mode: fc.constantFrom<LimiterMode>('enforce', 'shadow', 'off'),
  }),
  fc.record({ kind: fc.constant('flaky' as const), identity: fc.constantFrom(...IDENTITIES) }),
  fc.record({ kind: fc.constant('outage' as const), down: fc.boolean() }),
  fc.record({ kind: fc.constant('acquire' as const), identity: fc.constantFrom(...IDENTITIES) }),
  fc.record({ kind: fc.constant('fleet' as const), priority: fc.constantFrom(...CLASSES) }),
  fc.record({ kind: fc.constant('release' as const) }),
  fc.record({
    kind: fc.constant('worker' as const),
    priority: fc.constantFrom(...CLASSES),
    utilization: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
  }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 3000 }) }),
);

/** The key the test tallies under: the attributes every decision carries, less the reason (checked apart). */
const keyOf = (parts: { component: string; limiter: string; rule?: string; priority?: string; outcome: DecisionOutcome }) =>
  `${parts.component}|${parts.limiter}|${parts.rule ?? '-'}|${parts.priority ?? '-'}|${parts.outcome}`;

function add(tally: Map<string, number>, key: string): void {
  tally.set(key, (tally.get(key) ?? 0) + 1);
}

/** What a component in `mode` answered: refused is `refusal`, a shadow pass that enforce would have refused is shadow_limited. */
function expected(mode: LimiterMode, allowed: boolean, reason: string, refusal: 'limited' | 'shed'): DecisionOutcome {
  if (mode === 'off') return 'disabled';
  if (!allowed) return refusal;
  // In shadow mode the component lets everything through; the decision says whether enforce would have refused.
  return mode === 'shadow' && reason === 'shadow' ? 'shadow_limited' : 'allowed';
}

describe('sluiceMetrics with the OpenTelemetry SDK', () => {
  test('the exported counts equal the decisions made, per outcome, component, limiter, rule and class; the histogram counts each once', async () => {
    // Every outcome must come up in the generated mixes, or the comparison below proves less than it says.
    const covered = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(command, { minLength: 10, maxLength: 120, size: 'max' }),
        fc.constantFrom('allow' as const, 'deny' as const, 'fallback' as const),
        async (commands, policy) => {
          const otel = sdkPipeline();
          try {
            const metrics = sluiceMetrics({ meter: otel.meter });
            const clock = { now: CLOCK_START };
            const store = memoryStore();
            const modes: Record<string, LimiterMode> = { api: 'enforce', search: 'shadow', fleet: 'enforce', worker: 'enforce' };
            const limiters = {
              // Two rules, so that the deciding rule (sluice.rule) varies from one decision to the next.
              api: createLimiter({
                store,
                name: 'api',
                rules: [
                  tokenBucket({ id: 'burst', capacity: 3, refillRate: 1, interval: '1s' }),
                  fixedWindow({ id: 'minute', limit: 6, window: '1m' }),
                ],
                clock: () => clock.now,
                onDecision: metrics.onDecision,
              }),
              search: createLimiter({
                store,
                name: 'search',
                mode: 'shadow',
                rules: fixedWindow({ id: 'per-2s', limit: 2, window: '2s' }),
                clock: () => clock.now,
                onDecision: metrics.onDecision,
              }),
            };
            const outage = outageStore();
            const flaky = createLimiter({
              store: outage.store,
              name: 'flaky',
              rules: fixedWindow({ id: 'per-second', limit: 2, window: '1s' }),
              clock: () => clock.now,
              // A fallback store keeps limiting locally: degraded decisions then say ok or rate_limited, as healthy ones do.
              onStoreError: policy === 'fallback' ? memoryStore() : policy,
              // Without the breaker, a decision is degraded exactly when the store is down, which the test knows.
              circuitBreaker: false,
              onDecision: metrics.onDecision,
            });
            const inFlight = createConcurrencyLimiter({
              store,
              name: 'uploads',
              limit: 1,
              clock: () => clock.now,
              onDecision: metrics.onDecision,
            });
            const fleet = createFleetShedder({ store, capacity: 3, reserve: 0.5, clock: () => clock.now, onDecision: metrics.onDecision });
            let utilization = 0;
            const worker = createUtilizationShedder({
              name: 'worker',
              signal: () => utilization,
              delay: 0,
              // From rest to shedding every sheddable class in one sample of full overload: the mixes are short.
              rampUp: '1s',
              sampleEvery: '1s',
              clock: () => clock.now,
              random: () => 0.5,
              onDecision: metrics.onDecision,
            });

            const tally = new Map<string, number>();
            const reasons = new Map<string, number>();
            const held: { release(): Promise<boolean> }[] = [];
            let made = 0;
            const decided = (parts: Parameters<typeof keyOf>[0], reason: string) => {
              made++;
              covered.add(`${parts.component}:${parts.outcome}`);
              add(tally, keyOf(parts));
              add(reasons, `${parts.limiter}|${reason}`);
            };

            for (const c of commands) {
              switch (c.kind) {
                case 'limit': {
                  const limiter = limiters[c.limiter];
                  const d: Decision = c.sync
                    ? limiter.limitSync(c.identity, { cost: c.cost })
                    : await limiter.limit(c.identity, { cost: c.cost });
                  decided(
                    {
                      component: 'limiter',
                      limiter: c.limiter,
                      rule: d.rule,
                      outcome: expected(modes[c.limiter]!, d.allowed, d.reason, 'limited'),
                    },
                    d.reason,
                  );
                  break;
                }
                case 'mode':
                  modes[c.target] = c.mode;
                  if (c.target === 'api' || c.target === 'search') limiters[c.target].configure({ mode: c.mode });
                  else if (c.target === 'fleet') fleet.configure({ mode: c.mode });
                  else worker.configure({ mode: c.mode });
                  break;
                case 'outage':
                  outage.state.down = c.down;
                  break;
                case 'flaky': {
                  const d = await flaky.limit(c.identity);
                  expect(d.degraded).toBe(outage.state.down);
                  decided(
                    {
                      component: 'limiter',
                      limiter: 'flaky',
                      rule: d.rule,
                      outcome: outage.state.down ? 'degraded' : d.allowed ? 'allowed' : 'limited',
                    },
                    d.reason,
                  );
                  break;
                }
                case 'acquire': {
                  const d = await inFlight.acquire(c.identity);
                  if (d.lease !== undefined) held.push(d.lease);
                  decided({ component: 'concurrency', limiter: 'uploads', outcome: d.allowed ? 'allowed' : 'limited' }, d.reason);
                  break;
                }
                case 'fleet': {
                  const d = await fleet.acquire(c.priority);
                  if (d.lease !== undefined) held.push(d.lease);
                  decided(
                    {
                      component: 'fleet',
                      limiter: 'fleet',
                      priority: c.priority,
                      outcome: expected(modes.fleet!, d.allowed, d.reason, 'shed'),
                    },
                    d.reason,
                  );
                  break;
                }
                case 'release':
                  await held.shift()?.release();
                  break;
                case 'worker': {
                  utilization = c.utilization;
                  const d = worker.check(c.priority);
                  decided(
                    {
                      component: 'utilization',
                      limiter: 'worker',
                      priority: c.priority,
                      outcome: expected(modes.worker!, d.allowed, d.reason, 'shed'),
                    },
                    d.reason,
                  );
                  break;
                }
                case 'tick':
                  clock.now += c.ms;
                  break;
              }
            }

            const exported = await otel.collect();
            const decisions = exported.get('sluice.decisions');
            const duration = exported.get('sluice.decision.duration');
            if (made === 0) {
              // Nothing decided, nothing recorded: the SDK exports no point for an instrument never used.
              expect(decisions?.points ?? []).toEqual([]);
              return;
            }
            expect(decisions?.unit).toBe('{decision}');
            expect(duration?.unit).toBe('s');

            const seen = new Map<string, number>();
            const seenReasons = new Map<string, number>();
            for (const point of decisions!.points) {
              const a = point.attributes;
              // Never the identity: no attribute names it and no value is one.
              expect(Object.keys(a).some((k) => k.includes('identity'))).toBe(false);
              expect(Object.values(a).some((v) => IDENTITIES.includes(v as string))).toBe(false);
              const key = keyOf({
                component: a['sluice.component'] as string,
                limiter: a['sluice.limiter'] as string,
                rule: a['sluice.rule'] as string | undefined,
                priority: a['sluice.priority'] as string | undefined,
                outcome: a['sluice.outcome'] as DecisionOutcome,
              });
              seen.set(key, (seen.get(key) ?? 0) + counterValue(point));
              const reasonKey = `${a['sluice.limiter'] as string}|${a['sluice.reason'] as string}`;
              seenReasons.set(reasonKey, (seenReasons.get(reasonKey) ?? 0) + counterValue(point));
            }
            expect(Object.fromEntries([...seen].sort())).toEqual(Object.fromEntries([...tally].sort()));
            expect(Object.fromEntries([...seenReasons].sort())).toEqual(Object.fromEntries([...reasons].sort()));

            const histogramTotal = duration!.points.reduce((sum, point) => sum + histogramCount(point), 0);
            expect(histogramTotal).toBe(made);
          } finally {
            await otel.shutdown();
          }
        },
      ),
      { numRuns: 60 },
    );
    expect([...covered].sort()).toEqual(
      [
        'concurrency:allowed',
        'concurrency:limited',
        'fleet:allowed',
        'fleet:disabled',
        'fleet:shadow_limited',
        'fleet:shed',
        'limiter:allowed',
        'limiter:degraded',
        'limiter:disabled',
        'limiter:limited',
        'limiter:shadow_limited',
        'utilization:allowed',
        'utilization:disabled',
        'utilization:shadow_limited',
        'utilization:shed',
      ].sort(),
    );
  });
});
