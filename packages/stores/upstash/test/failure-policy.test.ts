/**
 * Failure policy over real HTTP: the fixture hangs, answers 500, or answers garbage, and every decision still
 * comes back within the deadline, marked degraded with the reason, through the policy the limiter chose.
 * An unhandled rejection fails the run (vitest reports it), so none escapes here either.
 */
import { createLimiter, fixedWindow, isSluiceError } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { upstashStore } from '../src/index.js';
import { client, control, identity } from './helpers.js';

beforeEach(() => control.reset());
afterEach(() => control.reset()); // also answers requests still held by `hang`

const rules = fixedWindow({ limit: 5, window: '1m' });

describe('a fixture that hangs', () => {
  it('hits the deadline: degraded STORE_TIMEOUT within timeout plus a small margin', async () => {
    const limiter = createLimiter({ store: upstashStore(client()), rules, timeout: 100, circuitBreaker: false });
    await control.fault('hang');
    const started = Date.now();
    const decision = await limiter.limit(identity('hang'));
    const elapsed = Date.now() - started;
    expect(decision).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
    expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_TIMEOUT');
    expect(elapsed).toBeGreaterThanOrEqual(95);
    expect(elapsed).toBeLessThan(100 + 150);
  });

  it("fails closed with onStoreError: 'deny'", async () => {
    const limiter = createLimiter({ store: upstashStore(client()), rules, timeout: 50, onStoreError: 'deny', circuitBreaker: false });
    await control.fault('hang');
    const decision = await limiter.limit(identity('deny'));
    expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
  });
});

describe.each([
  ['status-500', /internal error/],
  ['garbage', /Unable to parse response body/],
] as const)('a fixture that answers %s', (fault, message) => {
  it('goes through the policy with a STORE_ERROR naming the upstream failure', async () => {
    const limiter = createLimiter({ store: upstashStore(client()), rules, circuitBreaker: false });
    await control.fault(fault);
    const decision = await limiter.limit(identity(fault));
    expect(decision).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
    expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_ERROR');
    expect((decision.error as Error).message).toMatch(message);
    // The store did not retry on its own: one request reached the fixture (not an EVAL after the EVALSHA).
    expect((await control.stats()).requests).toBe(1);
  });

  it('falls back to a local store when the policy is a store, still marked degraded', async () => {
    const limiter = createLimiter({
      store: upstashStore(client()),
      rules: fixedWindow({ limit: 2, window: '1m' }),
      onStoreError: memoryStore(),
      circuitBreaker: false,
    });
    await control.fault(fault);
    const who = identity('fallback');
    const decisions = [await limiter.limit(who), await limiter.limit(who), await limiter.limit(who)];
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(decisions.every((d) => d.degraded)).toBe(true);
  });
});

describe('the circuit breaker', () => {
  it('stops sending to a failing fixture, then probes it again and recovers', async () => {
    let now = 1_700_000_000_000;
    const limiter = createLimiter({
      store: upstashStore(client(), { clock: 'client' }),
      rules,
      clock: () => now,
      circuitBreaker: { failureThreshold: 3, cooldown: 1_000 },
    });
    const who = identity('breaker');
    await control.fault('status-500');
    for (let i = 0; i < 10; i++) await limiter.limit(who);
    expect(limiter.circuit).toBe('open');
    expect((await control.stats()).requests).toBe(3); // the other 7 never left the process
    await control.fault(null);
    now += 1_000;
    const probe = await limiter.limit(who);
    expect(probe).toMatchObject({ allowed: true, degraded: false });
    expect(limiter.circuit).toBe('closed');
  });
});
