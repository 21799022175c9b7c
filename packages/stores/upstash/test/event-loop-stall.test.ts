/**
 * An event-loop stall is not a failure of the Upstash store, over real HTTP to the local Upstash REST fixture (a
 * server outside this test's event loop, as Upstash is). The replies arrive while the test's loop is stalled by a
 * real synchronous busy loop, and each needs several reads once it ends (the HTTP response, then its body). No
 * decision may be degraded, the limit must hold exactly, the breaker stay closed. And a fixture that really is slow
 * on a healthy loop is answered by the failure policy at the deadline.
 */
import { createLimiter, tokenBucket, type Decision } from '@sluice/core';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { upstashStore } from '../src/index.js';
import { client, control, identity } from './helpers.js';
import { degradedCodes, expectStoreAnswered, ioTurn, stallEventLoop, wallClock } from '../../../../test/harness/event-loop-stall.js';

beforeEach(() => control.reset());
afterEach(() => control.reset()); // also answers requests still held by `hang`

const RULES = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });
const TIMEOUT = 250;

describe('a stalled event loop is not a failure of the Upstash store', () => {
  for (const policy of ['allow', 'deny'] as const) {
    test(`20 decisions in flight through a 400 ms stall (onStoreError '${policy}'): none degraded, 5 of 20 allowed, breaker closed`, async () => {
      const limiter = createLimiter({
        name: `stall-${policy}`,
        store: upstashStore(client()),
        rules: RULES,
        onStoreError: policy,
        timeout: TIMEOUT,
      });
      await limiter.limit(identity('warm-up')); // the script is loaded, a connection is open
      await ioTurn(); // decisions made by a request handler, as they are
      const attacker = identity('attacker');
      const pending = Array.from({ length: 20 }, () => limiter.limit(attacker));
      stallEventLoop(400);
      const decisions: Decision[] = await Promise.all(pending);
      await expectStoreAnswered(limiter, decisions, 5, { identity: identity('other'), limit: 5 });
    });
  }
});

describe('an Upstash that is slow on a healthy event loop still gets its deadline', () => {
  test(`the fixture holds every request: each of 5 decisions is answered by the policy (STORE_TIMEOUT) within the ${TIMEOUT} ms deadline plus 100 ms by the caller's clock`, async () => {
    const limiter = createLimiter({ name: 'slow', store: upstashStore(client()), rules: RULES, timeout: TIMEOUT, circuitBreaker: false });
    await limiter.limit(identity('warm-up'));
    await control.fault('hang');
    const timed = await Promise.all(Array.from({ length: 5 }, () => wallClock(() => limiter.limit(identity('u')))));
    expect(degradedCodes(timed.map((t) => t.value))).toEqual(Array(5).fill('STORE_TIMEOUT'));
    for (const { elapsedMs } of timed) {
      expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT);
      expect(elapsedMs).toBeLessThanOrEqual(TIMEOUT + 100);
    }
  });
});
