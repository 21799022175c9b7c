/**
 * redisConfigSource on a real redis-server and a real three-master Cluster (both started here): the document in a
 * key, a PUBLISH on every write, watchers told through one duplicated connection. Pushes are measured: with a
 * refresh of an hour, only the push can have brought the change.
 */
import { describe, expect, test } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { deleteLimiterConfig, readLimiterConfig, setLimiterMode, setQuota, watchConfig, type ConfigWarning } from '@sluice/core/config';
import { redisConfigSource, redisStore } from '../src/index.js';
import { useServers } from './servers.js';

const servers = useServers();
const { connect, connectCluster } = servers;

function limiter(name: string, client: Redis | Cluster = connect()): Limiter {
  return createLimiter({ store: redisStore(client), rules: fixedWindow({ id: 'w', limit: 2, window: '1h' }), name });
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
  return performance.now() - started;
}

describe('redisConfigSource (standalone)', () => {
  test('the document is the key sluice:config:<name>; writes are pushed to every watcher at once', async () => {
    const writer = redisConfigSource(connect());
    const limiters = [limiter('push'), limiter('push')];
    const warnings: ConfigWarning[] = [];
    const watchers = limiters.map((l) =>
      watchConfig(l, redisConfigSource(connect()), { refresh: '1h', onWarning: (w) => void warnings.push(w) }),
    );
    await Promise.all(watchers.map((w) => w.ready));
    await setLimiterMode(writer, 'push', 'off');
    const ms = await until(() => limiters.every((l) => l.mode === 'off'));
    expect(ms).toBeLessThan(1_000);
    const raw = await connect().get('sluice:config:push');
    expect(JSON.parse(raw!)).toMatchObject({ version: 1, revision: 1, mode: 'off' });
    await setQuota(writer, 'push', 'acme', { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' });
    await until(() => limiters.every((l) => l.quotas.has('acme')));
    await deleteLimiterConfig(writer, 'push'); // a tombstone, pushed like any write
    await until(() => limiters.every((l) => l.mode === 'enforce' && l.quotas.size === 0));
    expect(await readLimiterConfig(writer, 'push')).toMatchObject({ revision: 3, deleted: true });
    await Promise.all(watchers.map((w) => w.stop()));
    expect(warnings).toEqual([]);
  });

  test('one subscriber connection per source, closed with the last watcher; a prefix moves key and channel', async () => {
    const admin = connect();
    const connections = async () =>
      ((await admin.client('LIST')) as string)
        .trim()
        .split('\n')
        .filter((line) => /\bsub=[1-9]/.test(line)).length;
    const source = redisConfigSource(connect(), { prefix: 'tenant-a' });
    const watchers = [watchConfig(limiter('one'), source, { refresh: '1h' }), watchConfig(limiter('two'), source, { refresh: '1h' })];
    await Promise.all(watchers.map((w) => w.ready));
    expect(await connections()).toBe(1);
    await setLimiterMode(source, 'one', 'shadow');
    expect(await admin.exists('tenant-a:config:one')).toBe(1);
    await watchers[0]!.stop();
    expect(await connections()).toBe(1);
    await watchers[1]!.stop();
    await new Promise((r) => setTimeout(r, 50)); // the disconnect reaches the server
    expect(await connections()).toBe(0);
  });

  test('Redis killed: the last configuration stays, one warning; restarted empty: the watcher reads again at reconnect and keeps it', async () => {
    const l = limiter('outage');
    const warnings: ConfigWarning[] = [];
    const source = redisConfigSource(connect());
    await setLimiterMode(source, 'outage', 'shadow');
    // A refresh of an hour: reads happen when asked, so after the restart only the subscriber's reconnect can read.
    const watcher = watchConfig(l, source, { refresh: '1h', timeout: '300ms', onWarning: (w) => void warnings.push(w) });
    await watcher.ready;
    expect(l.mode).toBe('shadow');
    await servers.server().kill();
    await watcher.refresh();
    await watcher.refresh();
    expect(l.mode).toBe('shadow');
    expect(warnings.map((w) => w.code)).toEqual(['read_failed']);
    expect((await l.limit('x')).allowed).toBe(true);
    await servers.server().restart(); // no persistence: the document is gone, and no operator deleted it
    await until(() => warnings.length === 2, 5_000);
    expect(warnings.map((w) => w.code)).toEqual(['read_failed', 'document_lost']);
    expect(l.mode).toBe('shadow');
    await watcher.stop();
  });

  test('writers on separate connections at once all land (one compare-and-set script each); a non-JSON document never matches', async () => {
    const sources = [redisConfigSource(connect()), redisConfigSource(connect()), redisConfigSource(connect())];
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        setQuota(sources[i % 3]!, 'race', `user${i}`, { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' }),
      ),
    );
    const stored = await readLimiterConfig(sources[0]!, 'race');
    expect(Object.keys(stored?.quotas ?? {})).toHaveLength(30);
    expect(stored?.revision).toBe(30);
    await connect().set('sluice:config:junk', 'not json');
    expect(await sources[1]!.replace('junk', 0, '{}')).toBe(false);
  });

  test('options are checked', () => {
    expect(() => redisConfigSource({} as never)).toThrow(/redisConfigSource: client must be an ioredis Redis or Cluster instance/);
    expect(() => redisConfigSource(connect(), { prefx: 'a' } as never)).toThrow(/redisConfigSource: unknown option "prefx"/);
    expect(() => redisConfigSource(connect(), { prefix: '' })).toThrow(/prefix must be a non-empty string/);
  });
});

describe('redisConfigSource (Cluster of three masters)', () => {
  test('a write through one Cluster client is pushed to watchers on other Cluster clients', async () => {
    const writer = redisConfigSource(await connectCluster());
    const clusterClients = await Promise.all([1, 2, 3].map(() => connectCluster()));
    const limiters = clusterClients.map((client) => limiter('cluster', client));
    const watchers = clusterClients.map((client, i) => watchConfig(limiters[i]!, redisConfigSource(client), { refresh: '1h' }));
    await Promise.all(watchers.map((w) => w.ready));
    await setLimiterMode(writer, 'cluster', 'off');
    expect(await until(() => limiters.every((l) => l.mode === 'off'))).toBeLessThan(1_000);
    await setLimiterMode(writer, 'cluster', 'enforce');
    await until(() => limiters.every((l) => l.mode === 'enforce'));
    expect((await readLimiterConfig(writer, 'cluster'))?.revision).toBe(2);
    const others = clusterClients.map((client) => redisConfigSource(client));
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => setQuota(others[i % 3]!, 'cluster', `user${i}`, { algorithm: 'gcra', limit: 5, period: '1s' })),
    );
    expect(Object.keys((await readLimiterConfig(writer, 'cluster'))?.quotas ?? {})).toHaveLength(12);
    await Promise.all(watchers.map((w) => w.stop()));
  });
});
