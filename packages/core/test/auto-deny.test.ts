/**
 * createAutoDeny: an identity refused `after` times within `within` is added to the deny list for `for`, through the
 * compare-and-set writer; tracking is bounded, one write is in flight per identity, and a failed write reaches
 * onError and nothing else. A fake clock drives the counting; nothing sleeps.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, type Decision, type DecisionEvent } from '../src/index.js';
import { createAutoDeny, readLimiterConfig, type AutoDenyOptions } from '../src/config/index.js';
import { MapStore } from './support/map-store.js';
import { MapConfigSource } from './support/map-config-source.js';

const REFUSED: Decision = {
  allowed: false,
  reason: 'rate_limited',
  limit: 1,
  remaining: 0,
  resetAt: 0,
  retryAfter: 1_000,
  degraded: false,
  rule: 'r',
  rules: [],
  now: 0,
};
const event = (identity: string, decision: Partial<Decision> = {}, operation: DecisionEvent['operation'] = 'limit'): DecisionEvent => ({
  limiter: 'api',
  operation,
  identity,
  decision: { ...REFUSED, ...decision },
  durationMs: 0,
});

/** A fake clock, and the source, observer and errors of one test. */
function setup(options: Partial<AutoDenyOptions> = {}) {
  const time = { now: 1_000_000 };
  const source = new MapConfigSource();
  const errors: { error: unknown; identity: string }[] = [];
  const deny = createAutoDeny({
    source,
    name: 'api',
    clock: () => time.now,
    onError: (error, identity) => void errors.push({ error, identity }),
    ...options,
  });
  const denied = async () => (await readLimiterConfig(source, 'api'))?.deny ?? [];
  /** Lets the writes in flight settle (MapConfigSource answers with resolved promises). */
  const settle = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  return { time, source, errors, deny, denied, settle };
}

describe('createAutoDeny', () => {
  test('the after-th refusal within the window adds the identity until now + for, with the default reason', async () => {
    const { time, deny, denied, settle, errors } = setup();
    for (let i = 0; i < 19; i++) {
      deny.onDecision(event('user:1'));
      time.now += 3_000; // 19 refusals over 57 s
    }
    await settle();
    expect(await denied()).toEqual([]);
    time.now -= 2_000; // the 20th refusal 59 s after the first
    deny.onDecision(event('user:1'));
    await deny.close();
    expect(await denied()).toEqual([
      { match: 'user:1', until: time.now + 3_600_000, reason: 'automatic: refused 20 times within 1m', addedAt: time.now },
    ]);
    expect(errors).toEqual([]);
  });

  test('refusals spread wider than the window do not add the identity; the window slides', async () => {
    const { time, deny, denied, settle } = setup({ after: 3, within: '10s' });
    for (const at of [0, 5_000, 10_000, 15_000, 20_000]) {
      time.now = 1_000_000 + at; // never three within 10 s: the window holds (now - 10 s, now]
      deny.onDecision(event('a'));
    }
    await settle();
    expect(await denied()).toEqual([]);
    time.now += 1; // 15 000, 20 000, 20 001: three within 10 s
    deny.onDecision(event('a'));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a']);
  });

  test('counts only enforced refusals of limit calls by the rules', async () => {
    const { deny, denied, settle } = setup({ after: 2 });
    const ignored: DecisionEvent[] = [
      event('a', { allowed: true, reason: 'ok' }),
      event('a', { allowed: true, reason: 'shadow' }),
      event('a', { reason: 'store_unavailable', degraded: true }),
      event('a', { degraded: true }),
      event('a', { reason: 'cost_exceeds_limit' }),
      event('a', {}, 'peek'),
      event('a', {}, 'take'),
    ];
    for (const e of ignored) for (let i = 0; i < 3; i++) deny.onDecision(e);
    await settle();
    expect(await denied()).toEqual([]);
    deny.onDecision(event('a'));
    deny.onDecision(event('a'));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a']);
  });

  test('tracks at most maxTracked identities, forgetting the one refused longest ago', async () => {
    const { deny, denied, settle } = setup({ after: 3, maxTracked: 2, writeEvery: 0 });
    deny.onDecision(event('a'));
    deny.onDecision(event('a'));
    deny.onDecision(event('b'));
    deny.onDecision(event('b'));
    deny.onDecision(event('a')); // a's third: denied, and now the most recently refused, so b goes first
    deny.onDecision(event('c')); // forgets b
    deny.onDecision(event('b')); // b starts again from one (forgets a)
    deny.onDecision(event('c'));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a']);
    deny.onDecision(event('b'));
    deny.onDecision(event('b'));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a', 'b']);
  });

  test('one write in flight: a store that does not answer gets one read, however many refusals and identities', () => {
    const { source, deny } = setup({ after: 2, writeEvery: 0 });
    source.hanging = true;
    for (let i = 0; i < 100; i++) deny.onDecision(event('a'));
    for (let i = 0; i < 2; i++) deny.onDecision(event('b'));
    expect(source.reads).toBe(1); // a's write; b waits for it to settle
  });

  test('identities that earn a block together go in one write; the next write waits for writeEvery on its clock', async () => {
    const { time, source, deny, denied, settle } = setup({ after: 1, writeEvery: '1s' });
    deny.onDecision(event('first')); // after a quiet period: written at once
    await settle();
    expect(source.writes).toBe(1);
    for (let i = 0; i < 500; i++) deny.onDecision(event(`ip:203.0.113.${i}`)); // an attack rotating identities
    await settle();
    expect(source.writes).toBe(1); // held for the period
    time.now += 1_000;
    deny.onDecision(event('last')); // the period has passed: this refusal's turn writes the whole batch
    await settle();
    expect(source.writes).toBe(2);
    expect(await denied()).toHaveLength(502);
  });

  test('a held batch is written by the timer when no refusal comes after it, and close writes what is held', async () => {
    const { source, deny, denied, settle } = setup({ after: 1, writeEvery: '30ms' });
    deny.onDecision(event('a'));
    deny.onDecision(event('b'));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a']);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a', 'b']);
    deny.onDecision(event('c'));
    deny.onDecision(event('d')); // held for 30 ms
    await deny.close();
    expect((await denied()).map((e) => e.match)).toEqual(['a', 'b', 'c', 'd']);
    expect(source.writes).toBe(3);
  });

  test('an identity it denied is not written again until its entry expires', async () => {
    const { time, source, deny, denied, settle } = setup({ after: 2, for: '1m' });
    deny.onDecision(event('a'));
    deny.onDecision(event('a'));
    await settle();
    const reads = source.reads;
    for (let i = 0; i < 50; i++) deny.onDecision(event('a')); // the instances have not picked the entry up yet
    await settle();
    expect(source.reads).toBe(reads);
    time.now += 59_999; // one ms before the entry expires: still not written
    deny.onDecision(event('a'));
    deny.onDecision(event('a'));
    await settle();
    expect(source.reads).toBe(reads);
    time.now += 1; // the entry has expired
    deny.onDecision(event('a'));
    deny.onDecision(event('a'));
    await settle();
    const entries = await denied();
    expect(entries).toHaveLength(1);
    expect(entries[0]!.until).toBe(time.now + 60_000);
  });

  test('a failed write goes to onError (no rejection escapes) and the identity can be tried again', async () => {
    const { source, deny, denied, settle, errors } = setup({ after: 2, writeEvery: 0 });
    source.failing = new Error('connection refused');
    deny.onDecision(event('a'));
    expect(() => deny.onDecision(event('a'))).not.toThrow();
    await settle();
    expect(errors).toEqual([{ error: source.failing, identity: 'a' }]);
    source.failing = undefined;
    deny.onDecision(event('a'));
    deny.onDecision(event('a'));
    await settle();
    expect((await denied()).map((e) => e.match)).toEqual(['a']);
  });

  test('an identity the deny list cannot hold, and an onError that throws, stay out of the decision path', async () => {
    const thrown: unknown[] = [];
    const { deny, settle } = setup({
      after: 1,
      onError: (error) => {
        thrown.push(error);
        throw new Error('handler failed');
      },
    });
    expect(() => deny.onDecision(event('x'.repeat(300)))).not.toThrow();
    await settle();
    expect(String(thrown[0])).toContain('entry.match: must be');
  });

  test('with a real limiter: the third refusal of a limit of 2 per hour denies the identity', async () => {
    const { time, deny, denied, settle } = setup({ after: 3, within: '1m' });
    const limiter = createLimiter({
      store: new MapStore(),
      rules: fixedWindow({ limit: 2, window: '1h' }),
      name: 'api',
      clock: () => time.now,
      onDecision: deny.onDecision,
    });
    const answers: boolean[] = [];
    for (let i = 0; i < 5; i++) answers.push((await limiter.limit('user:7')).allowed);
    await settle();
    expect(answers).toEqual([true, true, false, false, false]);
    expect((await denied()).map((e) => e.match)).toEqual(['user:7']);
  });

  test('close waits for writes in flight, then stops counting', async () => {
    const { deny, denied, source } = setup({ after: 1 });
    deny.onDecision(event('a'));
    await deny.close();
    expect((await denied()).map((e) => e.match)).toEqual(['a']);
    const reads = source.reads;
    deny.onDecision(event('b'));
    expect(source.reads).toBe(reads);
  });

  test('options are checked with errors that name them', () => {
    const source = new MapConfigSource();
    expect(() => createAutoDeny({ source, name: 'api', after: 0 })).toThrow('createAutoDeny: after must be a positive integer');
    expect(() => createAutoDeny({ source, name: 'api', within: '0s' })).toThrow('createAutoDeny: within');
    expect(() => createAutoDeny({ source, name: 'api', for: '1ms' })).toThrow('createAutoDeny: for');
    expect(() => createAutoDeny({ source, name: 'api', maxTracked: -1 })).toThrow('createAutoDeny: maxTracked');
    expect(() => createAutoDeny({ source, name: 'api', reason: 'r'.repeat(201) })).toThrow('createAutoDeny: reason');
    expect(() => createAutoDeny({ source, name: '' })).toThrow('createAutoDeny: name');
    expect(() => createAutoDeny({ source: {} as never, name: 'api' })).toThrow('createAutoDeny: source');
    expect(() => createAutoDeny({ source, name: 'api', limit: 3 } as never)).toThrow('unknown option "limit"');
  });
});
