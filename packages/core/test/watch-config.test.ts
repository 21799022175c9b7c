/**
 * watchConfig: a limiter follows the configuration stored under its name, read at start, every
 * `refresh` and at once on a push, never per decision; an unreadable store or a bad document keeps the last
 * configuration, with a warning, and never switches limiting off. Fake timers: nothing sleeps.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '../src/index.js';
import { deleteLimiterConfig, setLimiterMode, setLimiterRules, setQuota, watchConfig, type ConfigWarning } from '../src/config/index.js';
import { MapStore } from './support/map-store.js';
import { MapConfigSource } from './support/map-config-source.js';

const CODE_RULE = fixedWindow({ id: 'w', limit: 2, window: '1h' });
const spec = (limit: number) => ({ algorithm: 'fixed-window', id: 'w', limit, window: '1h' }) as const;

let warnings: ConfigWarning[];
beforeEach(() => {
  vi.useFakeTimers();
  warnings = [];
});
afterEach(() => {
  vi.useRealTimers();
});

function limiter(name = 'api'): Limiter {
  return createLimiter({ store: new MapStore(), rules: CODE_RULE, name });
}

/** How many of `n` decisions for `identity` are allowed, and the reason of the last. */
async function allowed(l: Limiter, identity: string, n = 10): Promise<{ allowed: number; reason: string }> {
  let count = 0;
  let reason = '';
  for (let i = 0; i < n; i++) {
    const d = await l.limit(identity);
    if (d.allowed) count++;
    reason = d.reason;
  }
  return { allowed: count, reason };
}

const onWarning = (w: ConfigWarning) => void warnings.push(w);

describe('watchConfig', () => {
  test("applies the stored rules, mode and quotas at start; a document without rules keeps the code's", async () => {
    const source = new MapConfigSource();
    await setQuota(source, 'api', 'acme', spec(5));
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning });
    await watcher.ready;
    expect(l.rules).toEqual([CODE_RULE]);
    expect(await allowed(l, 'acme')).toEqual({ allowed: 5, reason: 'rate_limited' });
    expect(await allowed(l, 'someone')).toEqual({ allowed: 2, reason: 'rate_limited' });
    expect(watcher.config?.quotas).toEqual({ acme: [spec(5)] });
    await setLimiterRules(source, 'api', spec(3));
    await watcher.refresh();
    expect(await allowed(l, 'other')).toEqual({ allowed: 3, reason: 'rate_limited' });
    await watcher.stop();
    expect(warnings).toEqual([]);
  });

  test('without push, a change is picked up by the next periodic read, not before; no read per decision', async () => {
    const source = new MapConfigSource(false);
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1s', onWarning });
    await watcher.ready;
    const readsAtStart = source.reads;
    await allowed(l, 'a', 500);
    expect(source.reads).toBe(readsAtStart);
    await setLimiterMode(source, 'api', 'off');
    await vi.advanceTimersByTimeAsync(999);
    expect(l.mode).toBe('enforce');
    await vi.advanceTimersByTimeAsync(1);
    expect(l.mode).toBe('off');
    expect((await l.limit('a')).reason).toBe('disabled');
    expect(source.reads).toBe(readsAtStart + 2);
    await watcher.stop();
  });

  test('with push, a change applies at once; after stop, nothing more is read or applied', async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1h', onWarning });
    await watcher.ready;
    expect(source.listeners.get('api')?.size).toBe(1);
    await setLimiterMode(source, 'api', 'shadow');
    await vi.advanceTimersByTimeAsync(0);
    expect(l.mode).toBe('shadow');
    await watcher.stop();
    expect(source.listeners.get('api')?.size).toBe(0);
    await setLimiterMode(source, 'api', 'off');
    const reads = source.reads; // the writer's own read counted
    await vi.advanceTimersByTimeAsync(5 * 3_600_000);
    expect([l.mode, source.reads]).toEqual(['shadow', reads]);
  });

  test("a document deleted on purpose returns the limiter to the code's rules, mode and quotas", async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const own = new Map([['partner', [fixedWindow({ id: 'w', limit: 7, window: '1h' })]]]);
    l.configure({ quotas: own });
    const watcher = watchConfig(l, source, { onWarning });
    await watcher.ready;
    await setLimiterRules(source, 'api', spec(9));
    await setLimiterMode(source, 'api', 'shadow');
    await setQuota(source, 'api', 'partner', spec(1));
    await watcher.refresh();
    expect([l.rules[0]!.limit, l.mode, l.quotas.get('partner')?.[0]?.limit]).toEqual([9, 'shadow', 1]);
    await deleteLimiterConfig(source, 'api'); // a tombstone: deleted on purpose
    await watcher.refresh();
    expect([l.rules, l.mode, l.quotas]).toEqual([[CODE_RULE], 'enforce', own]);
    expect(watcher.config).toBeUndefined();
    await watcher.stop();
  });

  test('while a watcher runs, a later configure() from code holds until the next change in the store', async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1s', onWarning });
    await watcher.ready;
    await setLimiterMode(source, 'api', 'shadow');
    await watcher.refresh();
    expect(l.mode).toBe('shadow');
    l.configure({ mode: 'off', rules: fixedWindow({ id: 'w', limit: 4, window: '1h' }) });
    // Reads of the unchanged document, periodic, pushed or asked for, leave the code's configuration alone.
    await watcher.refresh();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(source.reads).toBeGreaterThan(10);
    expect([l.mode, l.rules[0]!.limit]).toEqual(['off', 4]);
    // The next change in the store applies the whole document again.
    await setLimiterRules(source, 'api', spec(6));
    await vi.advanceTimersByTimeAsync(0);
    expect([l.mode, l.rules[0]!.limit]).toEqual(['shadow', 6]);
    await watcher.stop();
    expect(warnings).toEqual([]);
  });

  test('an unreadable store keeps the last configuration, warns once, and recovers; nothing rejects', async () => {
    const source = new MapConfigSource(false);
    await setLimiterMode(source, 'api', 'off');
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1s', onWarning });
    await watcher.ready;
    expect(l.mode).toBe('off');
    source.failing = new Error('connect ECONNREFUSED 127.0.0.1:6380');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(l.mode).toBe('off');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ code: 'read_failed' });
    expect(warnings[0]!.message).toMatch(
      /watchConfig\("api"\): the store could not be read \(connect ECONNREFUSED 127\.0\.0\.1:6380\); keeping the last known configuration/,
    );
    source.failing = undefined;
    await setLimiterMode(source, 'api', 'enforce');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(l.mode).toBe('enforce');
    await watcher.stop();
  });

  test('a read that never answers counts as failed after `timeout`, and later reads go on', async () => {
    const source = new MapConfigSource(false);
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1s', timeout: '300ms', onWarning });
    await watcher.ready;
    source.hanging = true;
    // The read starts at 1 s; its deadline (shared/deadline.ts) answers at 300 ms plus one turn of the event loop.
    await vi.advanceTimersByTimeAsync(1_299);
    expect(warnings).toEqual([]);
    await vi.advanceTimersByTimeAsync(10);
    expect(warnings.map((w) => w.code)).toEqual(['read_failed']);
    expect(warnings[0]!.message).toMatch(/the store did not answer within 300 ms/);
    source.hanging = false;
    await setLimiterMode(source, 'api', 'off');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(l.mode).toBe('off');
    await watcher.stop();
  });

  test('a bad document is ignored with a warning naming the problem: limiting stays on', async () => {
    const source = new MapConfigSource();
    await setLimiterRules(source, 'api', spec(4));
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning });
    await watcher.ready;
    // Written around the checks (by hand, or by an older tool): the kill switch misspelt, and a rule of limit 0.
    source.write('api', JSON.stringify({ version: 1, rules: [{ ...spec(0) }], mode: 'of' }));
    await vi.advanceTimersByTimeAsync(0);
    expect(warnings.map((w) => w.code)).toEqual(['invalid_document']);
    expect(warnings[0]!.message).toMatch(
      /the stored document is not valid and is ignored, the last configuration stays: rules\[0\]: fixedWindow: limit must be a positive integer, got 0/,
    );
    expect([l.rules[0]!.limit, l.mode]).toEqual([4, 'enforce']);
    expect(await allowed(l, 'x')).toEqual({ allowed: 4, reason: 'rate_limited' });
    source.write('api', 'not json');
    await vi.advanceTimersByTimeAsync(0);
    expect(warnings[1]!.message).toMatch(/not JSON/);
    expect(l.rules[0]!.limit).toBe(4);
    await watcher.stop();
  });

  test('one bad quota is ignored alone: that identity keeps its last good quota, the rest applies', async () => {
    const source = new MapConfigSource();
    await setQuota(source, 'api', 'acme', spec(5));
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning });
    await watcher.ready;
    const doc = { version: 1, mode: 'shadow', quotas: { acme: [{ ...spec(-1) }], globex: [spec(6)], initech: [{ algorithm: 'gcra' }] } };
    source.write('api', JSON.stringify(doc));
    await vi.advanceTimersByTimeAsync(0);
    expect(l.mode).toBe('shadow');
    expect(l.quotas.get('acme')?.[0]?.limit).toBe(5);
    expect(l.quotas.get('globex')?.[0]?.limit).toBe(6);
    expect(l.quotas.has('initech')).toBe(false);
    expect(warnings.map((w) => w.code)).toEqual(['invalid_quota', 'invalid_quota']);
    expect(warnings[0]!.message).toMatch(
      /quotas\["acme"\]\[0\]: fixedWindow: limit must be a positive integer, got -1; ignored: "acme" keeps its last good quota/,
    );
    expect(warnings[1]!.message).toMatch(/quotas\["initech"\]\[0\]: gcra: .*; ignored: "initech" keeps the limiter's rules/);
    await watcher.stop();
  });

  test('reads run one at a time and in order: a push during a slow read is read after it', async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1h', onWarning });
    await watcher.ready;
    let release!: () => void;
    const original = source.read.bind(source);
    let inFlight = 0;
    let most = 0;
    source.read = async (name) => {
      inFlight++;
      most = Math.max(most, inFlight);
      const text = await original(name);
      await new Promise<void>((r) => (release = r));
      inFlight--;
      return text;
    };
    const first = watcher.refresh(); // reads "no document"
    await vi.advanceTimersByTimeAsync(0);
    source.write('api', JSON.stringify({ version: 1, mode: 'off' })); // pushes while the first read is held
    release();
    await vi.advanceTimersByTimeAsync(0);
    release();
    await first;
    expect([l.mode, most]).toEqual(['off', 1]);
    await watcher.stop();
  });

  test('a subscription that fails is reported; the periodic read still brings changes', async () => {
    const source = new MapConfigSource();
    source.subscribe = () => Promise.reject(new Error('NOPERM this user has no permissions to run the subscribe command'));
    const l = limiter();
    const watcher = watchConfig(l, source, { refresh: '1s', onWarning });
    await watcher.ready;
    expect(warnings.map((w) => w.code)).toEqual(['subscribe_failed']);
    await setLimiterMode(source, 'api', 'off');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(l.mode).toBe('off');
    await watcher.stop();
  });

  test('options are checked with errors that name them', () => {
    const source = new MapConfigSource();
    expect(() => watchConfig(limiter(), source, { refresh: '5ms' })).toThrow(
      /watchConfig: refresh must be a duration from 10 to 2147483647 ms/,
    );
    expect(() => watchConfig(limiter(), source, { refesh: '1s' } as never)).toThrow(/watchConfig: unknown option "refesh"/);
    expect(() => watchConfig(limiter(), source, { onWarning: 'log' as never })).toThrow(/watchConfig: onWarning must be a function/);
    expect(() => watchConfig(limiter(), {} as never)).toThrow(/watchConfig: source must be a config source/);
    expect(() => watchConfig({} as never, source)).toThrow(/watchConfig: limiter must be a limiter made by createLimiter/);
  });
});
