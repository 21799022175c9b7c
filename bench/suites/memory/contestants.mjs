// One factory per contestant. Each runs its own loop over the shared workload, keeps its cursor between rounds,
// counts the decisions that allowed (so the work cannot be optimised away, and the mix is reported).
import { createLimiter, tokenBucket } from '@sluice/core';
import { createFleetAnalytics } from '@sluice/core/analytics';
import { memoryAnalyticsStore, memoryStore } from '@sluice/memory';
import { sluiceMetrics } from '@sluice/otel';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { MemoryStore as ExpressMemoryStore } from 'express-rate-limit';
import { TokenBucket } from 'limiter';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { createFloor, createFloorWithDecision } from './floor.mjs';
import { CAPACITY, REFILL_PER_SECOND, SMALL, WINDOW_MS, consumeRlf } from './workload.mjs';

function counted(name, body) {
  const tally = { allowed: 0, total: 0, cursor: 0 };
  return {
    name,
    ...body(tally),
    extra: () => ({ allowedPct: Math.round((tally.allowed / tally.total) * 1000) / 10 }),
  };
}

function sluiceLimiter(maxKeys, onDecision) {
  return createLimiter({
    store: memoryStore(maxKeys === undefined ? {} : { maxKeys }),
    rules: tokenBucket({ capacity: CAPACITY, refillRate: REFILL_PER_SECOND, interval: '1s' }),
    ...(onDecision === undefined ? {} : { onDecision }),
  });
}

/**
 * A real OpenTelemetry SDK MeterProvider, as an application sets one up, with a periodic reader into an in-memory
 * exporter whose interval (an hour) does not come up during a round: a real exporter collects once a minute or so,
 * which costs per attribute set, not per decision.
 */
function sdkMeter() {
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 3_600_000,
  });
  const provider = new MeterProvider({ readers: [reader] });
  return { meter: provider.getMeter('bench'), collect: () => reader.collect(), shutdown: () => provider.shutdown() };
}

export const SLUICE_LIMIT = 'sluice limit()';
export const SLUICE_SYNC = 'sluice limitSync()';
export const SLUICE_NOOP = 'limitSync() + no-op onDecision';
export const SLUICE_OTEL = 'limitSync() + sluiceMetrics';
export const SLUICE_OTEL_COUNTS = 'limitSync() + sluiceMetrics, duration: false';
/**
 * sluiceMetrics with a collection at the end of every round, timed with the round: what the SDK does per
 * decision at collection (sluiceMetrics hands it the round's durations then) is priced here, not left out.
 */
export const SLUICE_OTEL_COLLECTED = 'limitSync() + sluiceMetrics, collected';
/**
 * createFleetAnalytics into a memory analytics store: per-second counts and the top limited identities, its 1 s timer
 * publishing during the rounds as it does in production (the publish is priced with the decisions it falls among).
 */
export const SLUICE_ANALYTICS = 'limitSync() + createFleetAnalytics';
/** The rows that price an observer: limitSync() with onDecision set, against the SLUICE_SYNC row (unset). */
export const OBSERVED = [SLUICE_NOOP, SLUICE_OTEL, SLUICE_OTEL_COUNTS, SLUICE_OTEL_COLLECTED, SLUICE_ANALYTICS];
export const RLF = 'rate-limiter-flexible consume';
export const ERL = 'express-rate-limit increment';
export const LIMITER = 'limiter tryRemoveTokens';
export const FLOOR = 'floor (Map + arithmetic)';
/** The floor returning a decision of sluice's shape: what the answer's objects cost, apart from the limiter. */
export const FLOOR_DECISION = 'floor returning a Decision';
export const CLOCK = 'clock (Date.now() alone)';

/** sluiceMetrics on a fresh SDK meter: the observer, how to collect, and how to stop its provider. */
function sdkObserver({ duration, collected = false }) {
  const { meter, collect, shutdown } = sdkMeter();
  return { onDecision: sluiceMetrics({ meter, duration }).onDecision, collect: collected ? collect : undefined, shutdown };
}

/** createFleetAnalytics publishing into a memory analytics store; stopped (its last second published) at teardown. */
function analyticsObserver() {
  const analytics = createFleetAnalytics({ store: memoryAnalyticsStore() });
  return { onDecision: analytics.onDecision, shutdown: () => analytics.stop() };
}

/**
 * @param {{ ids: string[], order: Uint16Array | Uint32Array, mask: number }} workload the identities and which one each
 *   decision is for (see workload.mjs)
 * @param {{ maxKeys?: number, skip?: string[] }} options the memory store's maxKeys (default: the store's);
 *   contestants to leave out
 */
export function contestants(workload = SMALL, { maxKeys, skip = [] } = {}) {
  const { ids, order, mask: MASK } = workload;
  return [
    counted(SLUICE_LIMIT, (tally) => {
      let limiter;
      return {
        setup: () => void (limiter = sluiceLimiter(maxKeys)),
        async run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if ((await limiter.limit(ids[order[c++ & MASK]])).allowed) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    counted(SLUICE_SYNC, (tally) => {
      let limiter;
      return {
        setup: () => void (limiter = sluiceLimiter(maxKeys)),
        run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if (limiter.limitSync(ids[order[c++ & MASK]]).allowed) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    ...[
      [SLUICE_NOOP, () => ({ onDecision: () => {}, shutdown: () => {} })],
      [SLUICE_OTEL, () => sdkObserver({ duration: true })],
      [SLUICE_OTEL_COUNTS, () => sdkObserver({ duration: false })],
      [SLUICE_OTEL_COLLECTED, () => sdkObserver({ duration: true, collected: true })],
      [SLUICE_ANALYTICS, analyticsObserver],
    ].map(([name, observer]) =>
      counted(name, (tally) => {
        let limiter;
        let current;
        return {
          setup() {
            current = observer();
            limiter = sluiceLimiter(maxKeys, current.onDecision);
          },
          teardown: () => current.shutdown(),
          run(n) {
            let allowed = 0;
            let c = tally.cursor;
            for (let i = 0; i < n; i++) if (limiter.limitSync(ids[order[c++ & MASK]]).allowed) allowed++;
            tally.cursor = c;
            tally.allowed += allowed;
            tally.total += n;
            return current.collect?.();
          },
        };
      }),
    ),
    counted(RLF, (tally) => {
      let limiter;
      return {
        // Fixed window of 100 points per 2 s per key: no token bucket in RateLimiterMemory; same rate and burst.
        setup: () => void (limiter = new RateLimiterMemory({ points: CAPACITY, duration: WINDOW_MS / 1000 })),
        run: (n) => consumeRlf(limiter, RateLimiterRes, order, tally, n, workload),
      };
    }),
    counted(ERL, (tally) => {
      let store;
      return {
        // The store counts hits per fixed window; the middleware denies when totalHits > limit.
        setup() {
          store = new ExpressMemoryStore();
          store.init({ windowMs: WINDOW_MS });
        },
        teardown: () => store.shutdown(),
        async run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if ((await store.increment(ids[order[c++ & MASK]])).totalHits <= CAPACITY) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    counted(LIMITER, (tally) => {
      // `limiter` has one bucket per instance; a Map of buckets per identity is what a user writes around it.
      const buckets = new Map();
      const bucketFor = (identity) => {
        let bucket = buckets.get(identity);
        if (bucket === undefined) {
          bucket = new TokenBucket({ bucketSize: CAPACITY, tokensPerInterval: REFILL_PER_SECOND, interval: 'second' });
          bucket.content = CAPACITY; // it starts empty; every other contestant starts a new identity full
          buckets.set(identity, bucket);
        }
        return bucket;
      };
      return {
        run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if (bucketFor(ids[order[c++ & MASK]]).tryRemoveTokens(1)) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    counted(FLOOR, (tally) => {
      const take = createFloor();
      return {
        run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if (take(ids[order[c++ & MASK]])) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    counted(FLOOR_DECISION, (tally) => {
      const decide = createFloorWithDecision();
      return {
        run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if (decide(ids[order[c++ & MASK]]).allowed) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    // What every contestant pays to read the time (the floor and sluice call Date.now(), limiter performance.now()):
    // shown so the table says how much of each row is the clock rather than the limiter.
    counted(CLOCK, (tally) => ({
      run(n) {
        let allowed = 0;
        for (let i = 0; i < n; i++) if (Date.now() > 0) allowed++;
        tally.allowed += allowed;
        tally.total += n;
      },
    })),
  ].filter((contestant) => !skip.includes(contestant.name));
}
