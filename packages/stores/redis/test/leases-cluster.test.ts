/**
 * Concurrency leases on a Redis Cluster of three masters: the lease operations a process issues together share a
 * script call only when their keys share a hash tag (one identity), since a script's keys must live in one slot.
 * Acquires and releases of many identities issued in the same tick must each land on their own slot and count
 * exactly (a call mixing slots would fail with CROSSSLOT, and the limiter would answer degraded).
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Cluster } from 'ioredis';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { redisStore } from '../src/index.js';
import { startCluster, type RedisCluster } from '../../../../test/harness/redis.js';

let cluster: RedisCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
  client = new Cluster([...cluster.nodes]);
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => resolve());
    client.once('error', reject);
  });
});

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

test('acquires and releases of 20 identities issued in one tick: each exact on its own slot, nothing left', async () => {
  const limiter = createConcurrencyLimiter({
    store: redisStore(client),
    limit: 3,
    ttl: '30s',
    name: 'cluster-leases',
    onStoreError: 'deny',
    timeout: 5_000,
  });
  const identities = Array.from({ length: 20 }, (_, i) => `user-${i}`);
  // 5 acquires per identity, all issued before any answer: 3 granted and 2 refused for each.
  const decisions = await Promise.all(identities.flatMap((identity) => Array.from({ length: 5 }, () => limiter.acquire(identity))));
  expect(decisions.filter((d) => d.degraded)).toEqual([]);
  identities.forEach((identity, i) => {
    const mine = decisions.slice(i * 5, i * 5 + 5);
    expect(
      mine.map((d) => d.allowed),
      identity,
    ).toEqual([true, true, true, false, false]);
    expect(
      mine.map((d) => d.held),
      identity,
    ).toEqual([1, 2, 3, 3, 3]);
  });
  // The slots spread over the masters: the test did send calls to more than one node.
  const perNode = await Promise.all(client.nodes('master').map((node) => node.keys('sluice:cluster-leases:*')));
  expect(perNode.filter((keys) => keys.length > 0).length).toBeGreaterThan(1);
  expect(perNode.flat()).toHaveLength(identities.length);

  const released = await Promise.all(decisions.filter((d) => d.allowed).map((d) => d.lease!.release()));
  expect(released.every(Boolean)).toBe(true);
  const left = await Promise.all(client.nodes('master').map((node) => node.keys('sluice:cluster-leases:*')));
  expect(left.flat()).toEqual([]);
}, 60_000);
