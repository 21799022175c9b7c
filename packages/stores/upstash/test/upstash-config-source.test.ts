/**
 * upstashConfigSource through the real @upstash/redis client against the fixture on a real Redis (node and
 * edge-runtime): GET and SET of one key, no push, so a change arrives with the watcher's next periodic read; the
 * fixture's counters show what that costs (one GET per refresh, nothing per decision).
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { readLimiterConfig, setLimiterMode, setQuota, deleteLimiterConfig, watchConfig, type ConfigWarning } from '@sluice/core/config';
import { beforeEach, describe, expect, it } from 'vitest';
import { upstashConfigSource, upstashStore } from '../src/index.js';
import { client, control, identity } from './helpers.js';

beforeEach(() => control.reset());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, timeoutMs: number): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(5);
  }
  return performance.now() - started;
}

const configurations = {
  'default client (JSON replies parsed, base64)': {},
  'no base64, no deserialization': { responseEncoding: false as const, automaticDeserialization: false },
};

describe.each(Object.entries(configurations))('with %s', (_name, options) => {
  it('writes and reads the document under sluice:config:<name>; a watcher picks a change up at its next read', async () => {
    const name = identity('cfg');
    const source = upstashConfigSource(client(options));
    await setQuota(source, name, 'acme', { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' });
    expect(await readLimiterConfig(source, name)).toMatchObject({ revision: 1, quotas: { acme: [{ limit: 5 }] } });
    const raw = await client({ automaticDeserialization: false }).get<string>(`sluice:config:${name}`);
    expect(JSON.parse(raw!)).toMatchObject({ version: 1, revision: 1 });

    const limiter = createLimiter({ store: upstashStore(client(options)), rules: fixedWindow({ id: 'w', limit: 2, window: '1h' }), name });
    const warnings: ConfigWarning[] = [];
    const watcher = watchConfig(limiter, source, { refresh: '300ms', onWarning: (w) => void warnings.push(w) });
    await watcher.ready;
    expect(limiter.quotas.get('acme')?.[0]?.limit).toBe(5);
    await setLimiterMode(source, name, 'off');
    const picked = await until(() => limiter.mode === 'off', 2_000);
    expect(picked).toBeLessThan(300 + 500); // one refresh plus a request, with room for a loaded machine
    await deleteLimiterConfig(source, name);
    await until(() => limiter.mode === 'enforce' && limiter.quotas.size === 0, 2_000);
    await watcher.stop();
    expect(warnings).toEqual([]);
  });
});

it('a watcher costs one GET per refresh and nothing per decision', async () => {
  const name = identity('cost');
  const source = upstashConfigSource(client());
  const limiter = createLimiter({ store: upstashStore(client()), rules: fixedWindow({ limit: 1_000, window: '1h' }), name });
  const watcher = watchConfig(limiter, source, { refresh: '1s' });
  await watcher.ready;
  await control.reset();
  const started = performance.now();
  for (let i = 0; i < 50; i++) await limiter.limit('someone');
  const elapsed = performance.now() - started;
  const stats = await control.stats();
  await watcher.stop();
  const gets = stats.byCommand.get ?? 0;
  expect(gets).toBeLessThanOrEqual(Math.ceil(elapsed / 1_000));
  expect(stats.byCommand.evalsha).toBe(50);
});

it('the store failing: the last configuration stays, one warning, no rejection', async () => {
  const name = identity('fault');
  const source = upstashConfigSource(client({ retry: { retries: 0 } }));
  await setLimiterMode(source, name, 'shadow');
  const limiter = createLimiter({ store: upstashStore(client()), rules: fixedWindow({ limit: 1, window: '1h' }), name });
  const warnings: ConfigWarning[] = [];
  const watcher = watchConfig(limiter, source, { refresh: '100ms', onWarning: (w) => void warnings.push(w) });
  await watcher.ready;
  await control.fault('status-500');
  await until(() => warnings.length > 0, 2_000);
  await sleep(300);
  expect(limiter.mode).toBe('shadow');
  expect(warnings.map((w) => w.code)).toEqual(['read_failed']);
  await control.fault(null);
  await setLimiterMode(source, name, 'enforce');
  await until(() => limiter.mode === 'enforce', 2_000);
  await watcher.stop();
});

it('options are checked', () => {
  expect(() => upstashConfigSource({} as never)).toThrow(
    /upstashConfigSource: redis must be \{ url, token \} or an @upstash\/redis client/,
  );
  expect(() => upstashConfigSource(client(), { prefx: 'a' } as never)).toThrow(/upstashConfigSource: unknown option "prefx"/);
});

it('writers on separate clients at once all land (compare and set on the revision, one EVAL each)', async () => {
  const name = identity('race');
  const sources = [upstashConfigSource(client()), upstashConfigSource(client()), upstashConfigSource(client())];
  await Promise.all(
    Array.from({ length: 15 }, (_, i) =>
      setQuota(sources[i % 3]!, name, `user${i}`, { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' }),
    ),
  );
  const stored = await readLimiterConfig(sources[0]!, name);
  expect(Object.keys(stored?.quotas ?? {})).toHaveLength(15);
  expect(stored?.revision).toBe(15);
  expect(await sources[1]!.replace!(name, 3, '{}')).toBe(false);
});
