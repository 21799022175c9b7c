/**
 * Redis Cluster: a local cluster of three masters (started and torn down by this file) runs the store
 * conformance suite, and compound rules, through an ioredis `Cluster` client. An identity's keys share its
 * `{identity}` hash tag, so each decision is one single-slot EVALSHA on the node that owns the slot; decisions
 * issued together share a call only when they share a hash tag.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Cluster } from 'ioredis';
import { createLimiter, fixedWindow, gcra, slidingWindowLog, tokenBucket } from '@sluice/core';
import { describeStoreConformance } from '@sluice/conformance';
import { redisStore, type RedisStore } from '../src/index.js';
import { startCluster, type RedisCluster } from '../../../../test/harness/redis.js';

let cluster: RedisCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
  client = new Cluster([...cluster.nodes], { enableAutoPipelining: true });
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => resolve());
    client.once('error', reject);
  });
});

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

/** Keys under a prefix on every master (KEYS skips expired keys). */
async function keysEverywhere(pattern: string): Promise<string[]> {
  const perNode = await Promise.all(client.nodes('master').map((node) => node.keys(pattern)));
  return perNode.flat();
}

describeStoreConformance<RedisStore>({
  name: 'redis cluster',
  createStore: () => redisStore(client, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  keyPrefix: 'cluster-client',
  // Redis expires the keys by its own clock: the fake clock does not (expiry is checked by the store-clock run).
  inspectKeys: ({ prefix }) => keysEverywhere(`${prefix}:*`),
  keyExpiry: 'store',
  requireAll: true,
});

describeStoreConformance<RedisStore>({
  name: 'redis cluster',
  createStore: () => redisStore(client),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  keyPrefix: 'cluster-store',
  inspectKeys: ({ prefix }) => keysEverywhere(`${prefix}:*`),
  requireAll: true,
});

describe('compound rules on a 3-master cluster', () => {
  const rules = [
    tokenBucket({ capacity: 4, refillRate: 1, interval: '1h' }),
    fixedWindow({ limit: 6, window: '1h' }),
    gcra({ limit: 5, period: '1h' }),
    slidingWindowLog({ limit: 10, window: '1h' }),
  ];

  test('all-or-nothing across four algorithms, each identity on one slot, identities spread over the masters', async () => {
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'cluster-compound' });
    const identities = Array.from({ length: 24 }, (_, i) => `user-${i}`);
    for (const identity of identities) {
      const decisions = [];
      for (let i = 0; i < 6; i++) decisions.push(await limiter.limit(identity));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, false, false]);
      expect(decisions[4]).toMatchObject({ rule: 'tb', reason: 'rate_limited' });
      // The denied requests took nothing from the looser rules.
      const peek = await limiter.peek(identity);
      expect(peek.rules.map((r) => [r.id, r.remaining])).toEqual([
        ['tb', 0],
        ['fw:3600000', 2],
        ['gcra:3600000', 1],
        ['swl:3600000', 6],
      ]);
    }
    const owners = new Set<string>();
    for (const identity of identities) {
      const keys = await keysEverywhere(`sluice:cluster-compound:{${identity}}:*`);
      expect(keys).toHaveLength(4);
      const slots = await Promise.all(keys.map((key) => client.cluster('KEYSLOT', key)));
      expect(new Set(slots).size).toBe(1);
      for (const node of client.nodes('master')) {
        // A node that does not own the slot answers MOVED: not the owner.
        if ((await node.exists(...keys).catch(() => 0)) === 4) owners.add(`${node.options.host}:${node.options.port}`);
      }
    }
    expect(owners.size).toBe(3);
  });

  test('decisions issued together share one EVALSHA per hash tag: a hot identity costs one call, the others one each', async () => {
    const identities = ['hot', 'cold-a', 'cold-b', 'cold-c', 'cold-d'];
    // Load the script on every node that owns one of these slots (a fresh node answers NOSCRIPT once).
    const warm = createLimiter({ store: redisStore(client), rules, name: 'cluster-batch-warm' });
    await Promise.all(identities.map((identity) => warm.limit(identity)));
    const masters = client.nodes('master');
    await Promise.all(masters.map((node) => node.config('RESETSTAT')));
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'cluster-batch' });
    const hot = Array.from({ length: 8 }, () => limiter.limit('hot')); // 8: a call's size after a quiet tick
    const cold = identities.slice(1).map((identity) => limiter.limit(identity));
    const [hotDecisions, coldDecisions] = [await Promise.all(hot), await Promise.all(cold)];
    expect(hotDecisions.map((d) => d.allowed)).toEqual([...Array(4).fill(true), ...Array(4).fill(false)]);
    expect(coldDecisions.every((d) => d.allowed && !d.degraded)).toBe(true);
    const stats = await Promise.all(masters.map((node) => node.info('commandstats')));
    const calls = (name: string) =>
      stats.reduce((sum, text) => sum + Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(text)?.[1] ?? 0), 0);
    expect(calls('evalsha')).toBe(1 + 4);
    expect(calls('eval')).toBe(0);
  });

  test('reset deletes every rule of an identity with one single-slot DEL', async () => {
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'cluster-reset' });
    await limiter.limit('erin', { cost: 4 });
    expect((await limiter.limit('erin')).allowed).toBe(false);
    await limiter.reset('erin');
    expect(await keysEverywhere('sluice:cluster-reset:*')).toEqual([]);
    expect((await limiter.limit('erin')).allowed).toBe(true);
  });

  test('many identities in flight at once through autopipelining stay exact per identity', async () => {
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'cluster-flight' });
    const identities = Array.from({ length: 20 }, (_, i) => `flight-${i}`);
    const decisions = await Promise.all(
      identities.flatMap((identity) =>
        Array.from({ length: 10 }, () => limiter.limit(identity).then((d) => [identity, d.allowed] as const)),
      ),
    );
    for (const identity of identities) {
      expect(decisions.filter(([id, allowed]) => id === identity && allowed)).toHaveLength(4);
    }
  });
});
