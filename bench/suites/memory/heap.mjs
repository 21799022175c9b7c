// Child process (run with --expose-gc): pushes 1,000,000 distinct identities through one sluice limiter on a
// memory store capped at 100,000 keys and reports how much the heap grew. The baseline is taken before the store
// is built, so its own preallocation counts against it. Prints one JSON line (see lib/child.mjs).
import { createLimiter, tokenBucket } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { reply } from '../../lib/child.mjs';
import { CAPACITY, REFILL_PER_SECOND } from './workload.mjs';

const identities = Number(process.argv[2] ?? 1_000_000);
const maxKeys = Number(process.argv[3] ?? 100_000);

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const collect = () => {
  globalThis.gc();
  globalThis.gc();
};

collect();
const before = process.memoryUsage();
const store = memoryStore({ maxKeys });
const limiter = createLimiter({ store, rules: tokenBucket({ capacity: CAPACITY, refillRate: REFILL_PER_SECOND, interval: '1s' }) });
let peakHeapUsed = before.heapUsed;
let denied = 0;
const start = process.hrtime.bigint();
for (let i = 0; i < identities; i++) {
  if (!limiter.limitSync(`user:${i}`).allowed) denied++;
  if ((i & 0x3fff) === 0) peakHeapUsed = Math.max(peakHeapUsed, process.memoryUsage().heapUsed);
}
const elapsedMs = Number(process.hrtime.bigint() - start) / 1e6;
collect();
const after = process.memoryUsage();
const tracked = store.size;
const heapGrowthBytes = after.heapUsed - before.heapUsed;
const offHeapGrowthBytes = after.external + after.arrayBuffers - (before.external + before.arrayBuffers);

reply({
  identities,
  maxKeys,
  tracked,
  denied,
  heapGrowthBytes,
  offHeapGrowthBytes,
  bytesPerIdentity: Math.round(heapGrowthBytes / tracked),
  bytesPerIdentityWithOffHeap: Math.round((heapGrowthBytes + offHeapGrowthBytes) / tracked),
  peakHeapGrowthBytes: peakHeapUsed - before.heapUsed,
  rssAfterBytes: after.rss,
  elapsedMs: Math.round(elapsedMs),
  limiterName: limiter.name, // keeps the limiter (and so the store) reachable until after the last measurement
});
