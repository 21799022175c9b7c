// Memory suite: sluice on its memory store against the in-process peers and the floor, 10,000 identities,
// token bucket; then heap growth for 1,000,000 identities through a store capped at 100,000 keys.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';
import { compare } from '../lib/harness.mjs';
import { target } from '../lib/report.mjs';
import { addRatios, formatInteger, formatRatio, formatTable } from '../lib/table.mjs';
import {
  CLOCK,
  ERL,
  FLOOR,
  FLOOR_DECISION,
  LIMITER,
  OBSERVED,
  RLF,
  SLUICE_ANALYTICS,
  SLUICE_LIMIT,
  SLUICE_NOOP,
  SLUICE_OTEL,
  SLUICE_OTEL_COLLECTED,
  SLUICE_OTEL_COUNTS,
  SLUICE_SYNC,
  contestants,
} from './memory/contestants.mjs';
import { CAPACITY, IDENTITIES, LARGE_IDENTITIES, REFILL_PER_SECOND, SMALL, largeWorkload, makeOrder } from './memory/workload.mjs';

export const builds = ['@sluice/memory', '@sluice/otel'];

export const description =
  'in-process: sluice memory store vs rate-limiter-flexible, express-rate-limit, limiter, floor; heap for 1M identities';

const MiB = 2 ** 20;

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const ops = Number(options.ops ?? (quick ? 50_000 : 300_000));
  const rounds = Number(options.rounds ?? (quick ? 3 : 9));
  const warmupRounds = Number(options.warmup ?? 2);
  // CPU time by default: this suite does no I/O, and on a shared machine wall time mostly measures the run queue.
  const clock = options.clock === 'wall' ? 'wall' : 'cpu';

  log(`timing ${ops} decisions per round, ${warmupRounds} warmup + ${rounds} rounds, contestants interleaved`);
  const rows = await compare(contestants(), { ops, rounds, warmupRounds, clock, log });
  const ratios = [
    { key: 'vsLimitSync', label: '÷ limitSync', base: SLUICE_SYNC },
    { key: 'vsFloor', label: '÷ floor', base: FLOOR },
  ];
  addRatios(rows, ratios);

  // The same contestants on 100 identities: every identity is hot, and after its first 100 decisions nearly all
  // are denials, the path a limiter runs under abuse. Shown beside the main table; the targets are on the main one.
  const limitedIdentities = Number(options.limitedIdentities ?? 100);
  const limitedOps = ops;
  const limitedRounds = Math.max(3, Math.ceil(rounds / 2));
  log(`limited: ${limitedIdentities} identities, ${limitedOps} decisions per round, ${limitedRounds} rounds`);
  const limitedRows = addRatios(
    await compare(contestants({ ...SMALL, order: makeOrder(limitedIdentities) }), {
      ops: limitedOps,
      rounds: limitedRounds,
      warmupRounds,
      clock,
      log,
    }),
    ratios,
  );

  // The same contestants on 2^20 identities, all held before timing starts (the warmup is one pass over them):
  // every decision finds an identity used a million decisions ago, cold in the CPU caches. Sluice's store gets
  // maxKeys = 2^20 so that it keeps them all, as the peers' unbounded Maps do. rate-limiter-flexible is left out:
  // it arms a timer per key, a million of them; so are the observed rows, priced on the two tables above.
  const large = options.large === false || options.large === 'false' ? undefined : largeWorkload();
  let largeRows;
  if (large !== undefined) {
    const largeOps = quick ? 2 ** 17 : 2 ** 18;
    const largeRounds = quick ? 3 : 5;
    const largeWarmup = LARGE_IDENTITIES / largeOps;
    log(`large: ${LARGE_IDENTITIES} identities, ${largeWarmup} warmup rounds (one pass) + ${largeRounds} rounds of ${largeOps}`);
    largeRows = addRatios(
      await compare(contestants(large, { maxKeys: LARGE_IDENTITIES, skip: [RLF, ...OBSERVED] }), {
        ops: largeOps,
        rounds: largeRounds,
        warmupRounds: largeWarmup,
        clock,
        log,
      }),
      ratios,
    );
  }

  const identities = Number(options.identities ?? 1_000_000);
  const maxKeys = Number(options.maxKeys ?? 100_000);
  log(`heap: ${identities} distinct identities through a store capped at ${maxKeys} keys (child process, --expose-gc)`);
  const heap = await runNodeChild(join(dirname(fileURLToPath(import.meta.url)), 'memory', 'heap.mjs'), {
    args: [String(identities), String(maxKeys)],
  });

  const byName = (name, table = rows) => table.find((r) => r.name === name);
  const speedup = byName(RLF).nsPerOp / byName(SLUICE_LIMIT).nsPerOp;
  const syncVsFloor = byName(SLUICE_SYNC).nsPerOp / byName(FLOOR).nsPerOp;
  const limitVsSync = byName(SLUICE_LIMIT).nsPerOp / byName(SLUICE_SYNC).nsPerOp;
  /** limitSync's time over the faster of `limiter` and express-rate-limit: below 1 means ahead of both. */
  const vsPeers = (table) => byName(SLUICE_SYNC, table).nsPerOp / Math.min(byName(LIMITER, table).nsPerOp, byName(ERL, table).nsPerOp);
  const countLabel = formatInteger(IDENTITIES);
  /** What an observer adds to a limitSync() decision, in ns (the row's time minus limitSync()'s, onDecision unset). */
  const added = (name, table = rows) => `${(byName(name, table).nsPerOp - byName(SLUICE_SYNC, table).nsPerOp).toFixed(0)} ns`;
  const largeLabel = formatInteger(LARGE_IDENTITIES);
  const mib = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

  return {
    title: `Memory store, ${formatInteger(IDENTITIES)} identities, token bucket (capacity ${CAPACITY}, ${REFILL_PER_SECOND}/s refill), ${formatInteger(ops)} decisions per round, median of ${rounds} rounds after ${warmupRounds} warmup, ${rows[0].clock === 'cpu' ? 'process CPU time' : 'wall time'}`,
    rows,
    ratios,
    columns: [
      { key: 'wallNsPerOp', label: 'wall ns/op', format: (v) => v.toFixed(1) },
      { key: 'allowedPct', label: 'allowed', format: (v) => `${v.toFixed(1)}%` },
    ],
    sections: [
      {
        heading: `Mostly limited: the same contestants on ${formatInteger(limitedIdentities)} identities (${formatInteger(limitedOps)} decisions per round, median of ${limitedRounds} rounds)`,
        lines: formatTable(limitedRows, {
          ratios,
          columns: [{ key: 'allowedPct', label: 'allowed', format: (v) => `${v.toFixed(1)}%` }],
        }).split('\n'),
      },
      ...(largeRows === undefined
        ? []
        : [
            {
              heading: `${largeLabel} identities, all held before timing (memoryStore({ maxKeys: ${largeLabel} }); rate-limiter-flexible left out: a timer per key)`,
              lines: formatTable(largeRows, {
                ratios,
                columns: [{ key: 'allowedPct', label: 'allowed', format: (v) => `${v.toFixed(1)}%` }],
              }).split('\n'),
            },
          ]),
      {
        heading: `Heap: ${formatInteger(heap.identities)} distinct identities through memoryStore({ maxKeys: ${formatInteger(heap.maxKeys)} })`,
        lines: [
          `tracked identities after:  ${formatInteger(heap.tracked)}`,
          `heap growth (gc before/after, from before the store was built): ${mib(heap.heapGrowthBytes)} (${formatInteger(heap.heapGrowthBytes)} bytes)`,
          `bytes per tracked identity: ${formatInteger(heap.bytesPerIdentity)} on the heap, ${formatInteger(heap.bytesPerIdentityWithOffHeap)} with off-heap buffers (${mib(heap.offHeapGrowthBytes)})`,
          `peak heap growth during the flood (sampled, no forced gc): ${mib(heap.peakHeapGrowthBytes)}`,
          `${formatInteger(heap.identities)} decisions in ${formatInteger(heap.elapsedMs)} ms`,
        ],
      },
    ],
    targets: [
      target(
        'sluice limit() at least 3x faster per decision than rate-limiter-flexible consume',
        speedup,
        '>=',
        3,
        (v) => `${v.toFixed(2)}x faster`,
      ),
      target(
        `sluice limitSync() ahead of both limiter and express-rate-limit, ${countLabel} identities (time ÷ the faster peer's)`,
        vsPeers(rows),
        '<',
        1,
        formatRatio,
      ),
      target(
        `sluice limitSync() ahead of express-rate-limit, ${countLabel} identities (time ÷ its time)`,
        byName(SLUICE_SYNC).nsPerOp / byName(ERL).nsPerOp,
        '<',
        1,
        formatRatio,
      ),
      target(`sluice limitSync() within 2x of the floor, ${countLabel} identities`, syncVsFloor, '<=', 2, formatRatio),
      ...(largeRows === undefined
        ? []
        : [
            target(
              `sluice limitSync() ahead of both limiter and express-rate-limit, ${largeLabel} identities`,
              vsPeers(largeRows),
              '<',
              1,
              formatRatio,
            ),
            target(
              `sluice limitSync() within 2x of the floor, ${largeLabel} identities`,
              byName(SLUICE_SYNC, largeRows).nsPerOp / byName(FLOOR, largeRows).nsPerOp,
              '<=',
              2,
              formatRatio,
            ),
          ]),
      target(`sluice limit() within 1.3x of limitSync(), ${countLabel} identities`, limitVsSync, '<=', 1.3, formatRatio),
      target(
        `heap growth for ${formatInteger(heap.identities)} identities (cap ${formatInteger(heap.maxKeys)}) under 64 MiB`,
        heap.heapGrowthBytes / MiB,
        '<',
        64,
        (v) => `${v.toFixed(1)} MiB`,
      ),
    ],
    notes: [
      'Ratios are time per decision divided by the base row\'s: below 1.00x is faster. "spread" is half the (max − min) range of the rounds around the median.',
      '"allowed" is each contestant\'s share of allowed decisions over the run; faster contestants spend tokens faster (real clocks), so they see more denials.',
      `onDecision: "sluice limitSync()" is the limiter with onDecision unset, the path it took before observers existed. Set, an observer adds, per decision, at ${countLabel} identities (mostly limited): a no-op ${added(SLUICE_NOOP)} (${added(SLUICE_NOOP, limitedRows)}), sluiceMetrics on an OpenTelemetry SDK MeterProvider ${added(SLUICE_OTEL)} (${added(SLUICE_OTEL, limitedRows)}), the same with duration: false ${added(SLUICE_OTEL_COUNTS)} (${added(SLUICE_OTEL_COUNTS, limitedRows)}). The SDK's reader exports hourly here, so no collection falls in those rounds; "${SLUICE_OTEL_COLLECTED}" collects at the end of each round, timed with it: ${added(SLUICE_OTEL_COLLECTED)} (${added(SLUICE_OTEL_COLLECTED, limitedRows)}). createFleetAnalytics (per-second counts and top limited identities, published each second into a memory analytics store): ${added(SLUICE_ANALYTICS)} (${added(SLUICE_ANALYTICS, limitedRows)}).`,
      `Beyond the clock (${byName(CLOCK).nsPerOp.toFixed(1)} ns here), limitSync() spent ${(byName(SLUICE_SYNC).nsPerOp - byName(CLOCK).nsPerOp).toFixed(1)} ns and the floor ${(byName(FLOOR).nsPerOp - byName(CLOCK).nsPerOp).toFixed(1)} ns per decision at ${countLabel} identities. limitSync() returns a Decision (10 fields and a one-rule report: three objects, its epoch-ms fields boxed); the floor and limiter return a boolean. The floor returning a decision of that shape took ${byName(FLOOR_DECISION).nsPerOp.toFixed(1)} ns (${(byName(FLOOR_DECISION).nsPerOp / byName(FLOOR).nsPerOp).toFixed(2)}x the floor): the rest of limitSync()'s time is the limiter and the store.`,
    ],
    data: {
      heap,
      limited: limitedRows,
      large: largeRows,
      limitSpeedupVsRlf: Math.round(speedup * 100) / 100,
      limitSyncVsFloor: Math.round(syncVsFloor * 100) / 100,
    },
  };
}
