// HTTP deny list suite: what a limiter's deny list of 100,000 entries (mixed IPv4 addresses and /24s, IPv6 /56s
// and /48s, identities) adds to each request through @sluice/http's handler, side by side with the same handler
// and an empty list, and the lookup alone. In-process (no sockets): the handler's synchronous path on a memory
// store, 10,000 clients (three in four IPv4), none of them denied, so every request pays for the whole lookup
// and then for its rate decision. The heap the compiled list holds is measured in a child (http-deny/heap.mjs).
// Then a fleet (http-deny/fleet.mjs): 4 instance processes holding the list from a real redis-server, changed as
// operators change it, with the list in the Redis source's deny structure beside the document's field (the previous
// storage); and the operator's side (http-deny/cli.mjs, a child): `sluice config deny` add, remove, list and import
// on a 100,000-entry list kept on a real redis-server, each command the built binary in a process of its own, wall time.
import { createLimiter, fixedWindow } from '@sluice/core';
import { createHandler, matchDenyList } from '@sluice/http';
import { memoryStore } from '@sluice/memory';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';
import { compare } from '../lib/harness.mjs';
import { target } from '../lib/report.mjs';
import { addRatios, formatInteger } from '../lib/table.mjs';
import { clientAddresses, denyEntries } from './http-deny/entries.mjs';

export const builds = ['@sluice/http', '@sluice/memory', '@sluice/redis', '@sluice/cli'];
export const description =
  'in-process: @sluice/http handler with a 100,000-entry deny list vs an empty one; the lookup alone; its heap; sluice config deny on it (redis-server)';

const EMPTY = 'handler, empty deny list';
const FULL = 'handler, 100,000-entry deny list';
const CLIENTS = 10_000;
const ENTRIES = 100_000;
const TARGET_ADDED_NS = 1_000;
/** `sluice config deny add` and `remove` on a 100,000-entry list, the whole command as the operator waits for it. */
const TARGET_CLI_WRITE_MS = 500;
/** A one-entry change reaches every instance of the fleet (Redis pub/sub), judged from outside. */
const TARGET_PICKUP_MS = 250;
/** The longest an instance's event loop is held by applying one change (its CPU time: see fleet-worker.mjs). */
const TARGET_BLOCK_MS = 10;

function handlerContestant(name, deny) {
  const limiter = createLimiter({ name: 'bench', store: memoryStore(), rules: fixedWindow({ limit: 1_000_000_000, window: '1h' }) });
  if (deny.length > 0) limiter.configure({ deny });
  const handler = createHandler({ limiter, denyList: matchDenyList });
  const requests = clientAddresses(CLIENTS).map((remoteAddress) => ({ headers: {}, remoteAddress }));
  let refused = 0;
  return {
    name,
    setup() {
      // The first request compiles the list (once per list object): not part of the per-request cost.
      handler.run(requests[0]);
    },
    run(ops) {
      for (let i = 0; i < ops; i++) {
        const result = handler.run(requests[i % CLIENTS]);
        if (!result.allowed) refused++;
      }
    },
    extra: () => ({ refused }),
  };
}

export async function run({ options, log }) {
  // The flags every in-process suite reads (--quick, --ops, --rounds, --warmup, --clock); CPU time by default, as
  // the memory suite's: no I/O here, and on a shared machine wall time mostly measures the run queue.
  const quick = Boolean(options.quick);
  const timing = {
    ops: Number(options.ops ?? (quick ? 50_000 : 300_000)),
    rounds: Number(options.rounds ?? (quick ? 3 : 9)),
    warmupRounds: Number(options.warmup ?? 2),
    clock: options.clock === 'wall' ? 'wall' : 'cpu',
    log,
  };
  const entries = denyEntries(ENTRIES);

  log(`timing ${timing.ops} requests per round, ${timing.warmupRounds} warmup + ${timing.rounds} rounds, contestants interleaved`);
  const rows = await compare([handlerContestant(EMPTY, []), handlerContestant(FULL, entries)], timing);
  const ratios = [{ key: 'vsEmpty', label: '÷ empty list', base: EMPTY }];
  addRatios(rows, ratios);
  for (const row of rows) {
    if (row.refused !== 0) throw new Error(`${row.name}: ${row.refused} requests refused; the workload must be all allowed`);
  }
  const added = rows.find((r) => r.name === FULL).nsPerOp - rows.find((r) => r.name === EMPTY).nsPerOp;

  log('heap of the compiled list (child process, --expose-gc)');
  const heap = await runNodeChild(join(dirname(fileURLToPath(import.meta.url)), 'http-deny', 'heap.mjs'), { args: [String(ENTRIES)] });
  if (heap.firstRequestStatus !== 403) throw new Error(`heap.mjs: the denied request got ${heap.firstRequestStatus}, not 403`);

  log('sluice config deny on a redis-server (child process, each command a process of its own)');
  const cliRuns = Number(options['cli-runs'] ?? (quick ? 3 : 7));
  const cli = await runNodeChild(join(dirname(fileURLToPath(import.meta.url)), 'http-deny', 'cli.mjs'), {
    args: [String(cliRuns)],
    execArgv: ['--import', import.meta.resolve('tsx')],
  });
  log('a fleet of 4 instances with the list on a redis-server, changed as operators change it (child processes)');
  const fleet = await runNodeChild(join(dirname(fileURLToPath(import.meta.url)), 'http-deny', 'fleet.mjs'), {
    args: [String(options.instances ?? 4), String(options.changes ?? (quick ? 10 : 20))],
    execArgv: ['--import', import.meta.resolve('tsx')],
    timeoutMs: 900_000,
  });
  const fleetLines = fleetTable(fleet);

  const ms = (v) => `${Math.round(v)} ms`;
  const commandRows = [
    ['sluice --version (Node start and CLI load, the floor)', cli.commands.floor],
    [`config deny remove <match> (${formatInteger(cli.entries)} to ${formatInteger(cli.entries - 1)})`, cli.commands.remove],
    [`config deny add <match> (back to ${formatInteger(cli.entries)})`, cli.commands.add],
    ['config deny list --limit 100', cli.commands.page],
    [`config deny list --json (all ${formatInteger(cli.entries)}, NDJSON)`, cli.commands.json],
    [`config deny import <${formatInteger(cli.feedLines)}-line feed> --replace (${cli.changes} changes)`, cli.commands.import],
  ];
  const width = Math.max(...commandRows.map(([name]) => name.length));
  const cliLines = [
    `${'command'.padEnd(width)}  median     min     max  CPU (median)`,
    ...commandRows.map(
      ([name, s]) =>
        `${name.padEnd(width)}  ${ms(s.medianMs).padStart(6)}  ${ms(s.minMs).padStart(6)}  ${ms(s.maxMs).padStart(6)}  ${ms(s.cpuMedianMs).padStart(12)}`,
    ),
  ];

  return {
    title: `@sluice/http handler, ${formatInteger(CLIENTS)} clients (three in four IPv4, the rest IPv6), memory store, none denied; ${formatInteger(timing.ops)} requests per round, median of ${timing.rounds} rounds, ${rows[0].clock === 'cpu' ? 'process CPU time' : 'wall time'}`,
    rows,
    ratios,
    sections: [
      {
        heading: `Deny list of ${formatInteger(ENTRIES)} entries (40% IPv4 addresses, 10% IPv4 /24s, 20% IPv6 /56s, 10% IPv6 /48s, 20% identities)`,
        lines: [
          `added per request: ${Math.round(added)} ns`,
          `compiled matcher on the heap: ${(heap.matcherBytes / 2 ** 20).toFixed(1)} MiB (beyond the list itself), compiled in ${heap.compileMs} ms on the first request of a limiter's first list`,
          `the list replaced by one with an entry more: compiled in parts over ${heap.replaced.requests} requests (the replaced list applying meanwhile), each taking a median of ${heap.replaced.medianMs.toFixed(2)} ms and at most ${heap.replaced.longestMs.toFixed(2)} ms`,
          `the list changed an entry at a time (the change() of a live deny list, ${heap.changed.changes} changes): each applied by the next request, which took a median of ${(heap.changed.medianMs * 1000).toFixed(1)} µs and at most ${heap.changed.longestMs.toFixed(2)} ms (core's configure call: a median of ${(heap.changed.configureMedianMs * 1000).toFixed(1)} µs)`,
        ],
      },
      {
        heading: `A fleet of ${fleet.structure.instances} instances (processes, each @sluice/http on a loopback server with watchConfig) holding ${formatInteger(fleet.entries)} entries on a local redis-server: the list in the Redis source's own deny structure, beside the same fleet with the list as the document's field (the previous storage); ${fleet.structure.single.changes} one-entry changes (adds and removals), then one of 1,000 entries`,
        lines: fleetLines,
      },
      {
        heading: `sluice config deny on a ${formatInteger(cli.entries)}-entry list (${(cli.listBytes / 2 ** 20).toFixed(1)} MiB of entries, in the Redis source's deny structure) on a local redis-server ${cli.redisVersion}: wall time from spawn to exit and the process's CPU time, ${cli.commands.add.runs} runs each`,
        lines: cliLines,
      },
    ],
    targets: [
      target(
        `a ${formatInteger(ENTRIES)}-entry deny list adds <= ${TARGET_ADDED_NS} ns per request`,
        added,
        '<=',
        TARGET_ADDED_NS,
        (v) => `${Math.round(v)} ns`,
      ),
      target(
        `sluice config deny remove on a ${formatInteger(cli.entries)}-entry list <= ${TARGET_CLI_WRITE_MS} ms (median)`,
        cli.commands.remove.medianMs,
        '<=',
        TARGET_CLI_WRITE_MS,
        ms,
      ),
      target(
        `sluice config deny add on a ${formatInteger(cli.entries)}-entry list <= ${TARGET_CLI_WRITE_MS} ms (median)`,
        cli.commands.add.medianMs,
        '<=',
        TARGET_CLI_WRITE_MS,
        ms,
      ),
      target(
        `a one-entry change reaches every instance within ${TARGET_PICKUP_MS} ms (the slowest of ${fleet.structure.single.changes} changes × ${fleet.structure.instances} instances)`,
        fleet.structure.single.pickupMaxMs,
        '<=',
        TARGET_PICKUP_MS,
        ms,
      ),
      target(
        `applying a one-entry change holds an instance's event loop <= ${TARGET_BLOCK_MS} ms (its CPU time, the longest)`,
        fleet.structure.single.applyCpuMaxMs,
        '<=',
        TARGET_BLOCK_MS,
        (v) => `${v.toFixed(1)} ms`,
      ),
      target(
        `applying a 1,000-entry change holds an instance's event loop <= ${TARGET_BLOCK_MS} ms (its CPU time, the longest)`,
        fleet.structure.bulk.applyCpuMaxMs,
        '<=',
        TARGET_BLOCK_MS,
        (v) => `${v.toFixed(1)} ms`,
      ),
    ],
    heap,
    cli,
    fleet,
  };
}

/** The fleet's table: each measure for the deny structure and for the document, side by side. */
function fleetTable({ structure: s, document: d }) {
  const f = (v) => (v >= 100 ? `${Math.round(v)} ms` : `${v.toFixed(1)} ms`);
  const rows = [
    ['instance start: list read and compiled (median)', s.loadMs, d.loadMs],
    ['one-entry change: write, as the writer waits (median)', s.single.writeMedianMs, d.single.writeMedianMs],
    ['one-entry change: until every instance answers it (median)', s.single.pickupMedianMs, d.single.pickupMedianMs],
    ['one-entry change: until every instance answers it (slowest)', s.single.pickupMaxMs, d.single.pickupMaxMs],
    ['one-entry change: applying it, CPU time (longest)', s.single.applyCpuMaxMs, undefined],
    ['one-entry change: applying it, wall time (median / longest)', [s.single.applyMedianMs, s.single.applyMaxMs], undefined],
    ['one-entry change: event-loop delay (longest)', s.single.blockMaxMs, d.single.blockMaxMs],
    [
      'one-entry change: an allowed client, p99 / slowest',
      [s.single.probeP99Ms, s.single.probeMaxMs],
      [d.single.probeP99Ms, d.single.probeMaxMs],
    ],
    ['1,000-entry change: until every instance holds it', s.bulk.pickupMs, d.bulk.pickupMs],
    ['1,000-entry change: applying it, CPU time (longest)', s.bulk.applyCpuMaxMs, undefined],
    ['1,000-entry change: event-loop delay (longest)', s.bulk.blockMaxMs, d.bulk.blockMaxMs],
    ['nothing changing: event-loop delay (longest), the floor', s.idle.blockMaxMs, d.idle.blockMaxMs],
    ['memory per instance for the list: RSS / heap (median)', [s.rssMiB, s.heapMiB], [d.rssMiB, d.heapMiB]],
  ];
  const cell = (v, unit = f) => (v === undefined ? '-' : Array.isArray(v) ? v.map((x) => unit(x)).join(' / ') : unit(v));
  const mib = (v) => `${v.toFixed(1)} MiB`;
  const width = Math.max(...rows.map(([name]) => name.length));
  return [
    `${'measure'.padEnd(width)}  ${'deny structure'.padStart(22)}  ${'document (previous)'.padStart(22)}`,
    ...rows.map(([name, a, b]) => {
      const unit = name.startsWith('memory') ? mib : f;
      return `${name.padEnd(width)}  ${cell(a, unit).padStart(22)}  ${cell(b, unit).padStart(22)}`;
    }),
    'Applying: the synchronous handling of a pushed change in the instance (parse, check, apply); CPU time is what the',
    'instance spent, which other processes on an oversubscribed machine do not stretch; the event-loop delay is wall',
    `time and counts them (compare the floor). Warnings seen: ${[...s.warnings, ...d.warnings].join(', ') || 'none'}.`,
  ];
}
