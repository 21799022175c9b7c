/**
 * The bug this pins: the Redis README said a frozen test clock never loses state early, but with `clock: 'client'`
 * Redis expires keys by its own clock: a key lives the step's ttl plus CLIENT_CLOCK_EXPIRY_SLACK_MS of Redis real
 * time, whatever the client clock says. The README now states that rule; these tests hold it on a real redis-server
 * from both sides: state kept while real time < ttl + slack (even past the ttl), and gone after, although the frozen
 * client clock still says the window is on. They wait on conditions Redis reports (PTTL, EXISTS), never on fixed
 * sleeps.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '../src/index.js';
import { CLIENT_CLOCK_EXPIRY_SLACK_MS } from '@sluice/redis-script';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

const FROZEN = 1_893_456_000_000; // a window boundary of the 100 ms rule below
const WINDOW_MS = 100;
const KEY = `sluice:frozen:{a}:fw:${WINDOW_MS}`;

let server: RedisServer;
let client: Redis;
beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port });
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

/** Polls `check` every 10 ms until it holds; fails after `limitMs` (a bound, not an assertion on timing). */
async function until(check: () => Promise<boolean>, what: string, limitMs = 10_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a frozen client clock on Redis keeps state for ttl + slack of Redis real time, then loses it', () => {
  test('kept while real time < ttl + slack (past the ttl too); gone after, and the next decision at the same frozen time starts fresh', async () => {
    const limiter = createLimiter({
      store: redisStore(client, { clock: 'client' }),
      rules: fixedWindow({ limit: 1, window: WINDOW_MS }),
      name: 'frozen',
      clock: () => FROZEN,
    });
    const first = await limiter.limit('a');
    expect(first).toMatchObject({ allowed: true, remaining: 0 });
    const ttl = first.resetAt - FROZEN;
    expect(ttl).toBe(WINDOW_MS);
    const pttl = await client.pttl(KEY);
    expect(pttl).toBeGreaterThan(ttl);
    expect(pttl).toBeLessThanOrEqual(ttl + CLIENT_CLOCK_EXPIRY_SLACK_MS);

    // More than the ttl has passed in real time (less than the slack is left), not ttl + slack: state is kept.
    await until(async () => (await client.pttl(KEY)) < CLIENT_CLOCK_EXPIRY_SLACK_MS - 50, 'the ttl passing in real time');
    expect(await limiter.limit('a')).toMatchObject({ allowed: false, reason: 'rate_limited' });
    expect(await client.exists(KEY)).toBe(1);

    // ttl + slack of real time: Redis has expired the key, though the frozen clock says the window is still on.
    await until(async () => (await client.exists(KEY)) === 0, 'the key expiring');
    expect(await limiter.limit('a')).toMatchObject({ allowed: true, remaining: 0, resetAt: FROZEN + WINDOW_MS });
  });

  test('the README states this rule, and no longer promises that a frozen clock never loses state early', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(CLIENT_CLOCK_EXPIRY_SLACK_MS).toBe(1000);
    const says = (text: string | RegExp) => (typeof text === 'string' ? readme.includes(text) : text.test(readme));
    expect(says(/never loses? state early/), 'the old promise is gone').toBe(false);
    expect(says('a key lives its time-to-live plus 1 s (`CLIENT_CLOCK_EXPIRY_SLACK_MS`) of Redis real time'), 'the rule').toBe(true);
    const after =
      "A frozen or fake test clock does not stop Redis's clock: once the time-to-live plus 1 s has passed in real time the state is gone";
    expect(says(after), 'what happens after').toBe(true);
  });
});
