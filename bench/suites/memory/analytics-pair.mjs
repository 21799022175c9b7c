// The cost createFleetAnalytics adds to a decision, resolved more finely than the memory suite's rows can on a shared
// machine: two limiters on the memory store, one with a no-op onDecision and one with createFleetAnalytics (publishing
// into a memory analytics store), timed in alternation, 24 rounds of 200,000 limitSync() calls (4 warm-up), process
// CPU time; prints each median and the median of the paired differences. Run from bench/:
//   node suites/memory/analytics-pair.mjs [identities=10000]
import { createLimiter, tokenBucket } from '@sluice/core';
import { createFleetAnalytics } from '@sluice/core/analytics';
import { memoryAnalyticsStore, memoryStore } from '@sluice/memory';
import { CAPACITY, REFILL_PER_SECOND } from './workload.mjs';

const identities = Number(process.argv[2] ?? 10_000);
const ROUNDS = 24;
const WARMUP = 4;
const OPS = 200_000;
const ids = Array.from({ length: identities }, (_, i) => `user:${i}`);
const limiter = (onDecision) =>
  createLimiter({
    store: memoryStore(),
    rules: tokenBucket({ capacity: CAPACITY, refillRate: REFILL_PER_SECOND, interval: '1s' }),
    onDecision,
  });
const analytics = createFleetAnalytics({ store: memoryAnalyticsStore() });
const variants = { noop: limiter(() => {}), analytics: limiter(analytics.onDecision) };
const times = { noop: [], analytics: [] };
let cursor = 0;
let allowed = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, subject] of Object.entries(variants)) {
    const start = process.cpuUsage();
    for (let i = 0; i < OPS; i++) if (subject.limitSync(ids[(cursor++ * 7919) % identities]).allowed) allowed++;
    const used = process.cpuUsage(start);
    if (round >= WARMUP) times[name].push(((used.user + used.system) * 1000) / OPS);
  }
}
await analytics.stop();
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
const added = times.noop.map((noop, i) => times.analytics[i] - noop);
console.log(
  `${identities} identities (${Math.round((allowed / (ROUNDS * OPS * 2)) * 100)}% allowed): no-op onDecision ${median(times.noop).toFixed(1)} ns, ` +
    `createFleetAnalytics ${median(times.analytics).toFixed(1)} ns, added ${median(added).toFixed(1)} ns per decision (median of ${added.length} paired rounds)`,
);
