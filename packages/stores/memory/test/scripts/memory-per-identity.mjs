// Measures the heap a memory store uses per tracked identity, per algorithm, and what an empty store preallocates.
// Run after a build:  node --expose-gc test/scripts/memory-per-identity.mjs [identities=100000]
// Identities look like "user-123456" (11 characters); longer identities add about 1 byte per character.
import { createLimiter, fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket } from '@sluice/core';
import { memoryStore } from '../../dist/index.js';

if (typeof globalThis.gc !== 'function') {
  console.error('run with: node --expose-gc test/scripts/memory-per-identity.mjs');
  process.exit(1);
}
const count = Number(process.argv[2] ?? 100_000);
const heap = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
};

const rules = {
  'fixed window': () => fixedWindow({ limit: 10, window: '1m' }),
  'sliding window log (1 request)': () => slidingWindowLog({ limit: 10, window: '1m' }),
  'sliding window log (10 requests)': () => slidingWindowLog({ limit: 10, window: '1m' }),
  'sliding window counter': () => slidingWindowCounter({ limit: 10, window: '1m' }),
  'token bucket': () => tokenBucket({ capacity: 10, refillRate: 1 }),
  'leaky bucket': () => leakyBucket({ capacity: 10, leakRate: 1 }),
  GCRA: () => gcra({ limit: 10, period: '1m' }),
  'fixed window + token bucket (compound)': () => [fixedWindow({ limit: 10, window: '1m' }), tokenBucket({ capacity: 10, refillRate: 1 })],
};

const base = heap();
let store = memoryStore({ maxKeys: count });
const preallocated = heap() - base;
store = undefined;

console.log(`${count.toLocaleString('en-US')} identities per row, node ${process.version}`);
console.log(
  `empty store with maxKeys ${count}: ${(preallocated / count).toFixed(1)} bytes per slot preallocated (${(preallocated / 1048576).toFixed(1)} MiB)`,
);
for (const [name, make] of Object.entries(rules)) {
  const requests = name.includes('10 requests') ? 10 : 1;
  let now = Date.UTC(2030, 0, 1);
  store = memoryStore({ maxKeys: count });
  const limiter = createLimiter({ store, rules: make(), clock: () => now });
  const before = heap();
  for (let r = 0; r < requests; r++) {
    for (let i = 0; i < count; i++) limiter.limitSync(`user-${String(i).padStart(6, '0')}`);
    now += 1; // distinct log entries
  }
  const perIdentity = (heap() - before) / count;
  if (store.size !== count) throw new Error(`expected ${count} identities, store holds ${store.size}`);
  console.log(`${name.padEnd(40)} ${perIdentity.toFixed(0).padStart(5)} bytes per identity`);
  store = undefined;
}
