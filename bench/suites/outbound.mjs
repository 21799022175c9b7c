// Outbound suite (the case of the article 'Rate limiting with Redis'): worker processes calling a third party that
// allows N requests per second across all of them, each call waiting for its turn instead of being refused. One
// redis-server and one mock third party (an HTTP server on 127.0.0.1 counting per fixed 1 s window and answering 429
// past the limit), both started here; the contestants run one after the other on them, each with the same worker
// processes and jobs for the same time: sluice (redisStore + GCRA, limiter.wait before each call) and bottleneck in
// its Clustering mode (ioredis). Reported: what the third party saw per second, its 429s, the waits (enqueue to
// send) and the Redis commands per request, as the workers' clients sent them and as Redis executed them (INFO
// commandstats, script internals in).
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { target } from '../lib/report.mjs';
import { perSecond, startMockThirdParty } from './outbound/mock.mjs';
import { startRedisServer } from './outbound/redis-server.mjs';

export const description =
  "workers sharing a third party's N/s through Redis, waiting for their turn: sluice limiter.wait (GCRA) vs bottleneck Clustering (minTime)";
export const builds = ['@sluice/core', '@sluice/redis'];

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'outbound', 'worker.mjs');
const SLUICE = 'sluice wait, GCRA';
const BOTTLENECK = 'bottleneck Clustering, minTime';
const CONTESTANTS = [
  { name: SLUICE, kind: 'sluice' },
  { name: BOTTLENECK, kind: 'bottleneck' },
];

/** @param {{ options: Record<string, string | true>, log: (line: string) => void }} context */
export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const limit = Number(options.limit ?? 50);
  const workers = Number(options.workers ?? 8);
  const jobs = Number(options.jobs ?? 4);
  const seconds = Number(options.seconds ?? (quick ? 3 : 6));

  const server = await startRedisServer();
  const mock = await startMockThirdParty({ limit });
  log(
    `redis-server ${server.version} on port ${server.port} (pid ${server.pid}); mock third party on port ${mock.port}: ${limit} per fixed 1 s window, 429 past it`,
  );
  const admin = new Redis({ host: '127.0.0.1', port: server.port });
  try {
    const rows = [];
    const perSecondLines = [];
    const mixLines = [];
    for (const contestant of CONTESTANTS) {
      const id = `outbound-${contestant.kind}-${Date.now()}`;
      log(`${contestant.name}: ${workers} worker processes x ${jobs} jobs for ${seconds} s`);
      const result = await runContestant({
        kind: contestant.kind,
        id,
        workers,
        jobs,
        limit,
        seconds,
        port: server.port,
        mockPort: mock.port,
        admin,
      });
      const seen = perSecond(mock.arrivals(id), limit);
      const waits = result.waits.sort((a, b) => a - b);
      const at = (p) => (waits.length === 0 ? NaN : waits[Math.min(waits.length - 1, Math.floor(p * waits.length))]);
      const rate = seen.fullWindows === 0 ? seen.total / seconds : seen.inFullWindows / seen.fullWindows;
      const sentTotal = Object.values(result.sent).reduce((a, b) => a + b, 0);
      const executedTotal = Object.values(result.executed).reduce((a, b) => a + b, 0);
      rows.push({
        name: contestant.name,
        nsPerOp: Math.round(1e10 / rate) / 10,
        opsPerSec: Math.round(rate),
        requests: seen.total,
        maxPerSecond: seen.max,
        utilisationPct: Math.round(seen.utilisation * 1000) / 10,
        fullWindows: seen.fullWindows,
        rejected: seen.rejected,
        overLimitSeconds: seen.overLimitSeconds,
        waitP50Ms: Math.round(at(0.5)),
        waitP99Ms: Math.round(at(0.99)),
        waitMaxMs: Math.round(waits[waits.length - 1] ?? NaN),
        sentPerRequest: sentTotal / seen.total,
        executedPerRequest: executedTotal / seen.total,
        degraded: result.degraded,
        errors: result.errorCount,
        perSecond: seen.counts,
        sent: result.sent,
        executed: result.executed,
      });
      perSecondLines.push(`${contestant.name.padEnd(32)} ${seen.counts.map((c) => String(c).padStart(3)).join(' ')}`);
      mixLines.push(`${contestant.name}: sent ${mix(result.sent, seen.total)}; executed ${mix(result.executed, seen.total)}`);
      if (result.errorCount > 0) log(`${contestant.name}: ${result.errorCount} calls failed, e.g. ${result.errorSamples.join(' | ')}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    const row = (name) => rows.find((r) => r.name === name);
    const targets = [];
    for (const r of rows) {
      targets.push(
        target(
          `${r.name}: no second over the limit at the third party`,
          r.overLimitSeconds,
          '<=',
          0,
          (v) => `${v} of ${r.perSecond.length} (max ${r.maxPerSecond}/s)`,
        ),
        target(`${r.name}: no 429 from the third party`, r.rejected, '<=', 0, (v) => `${v} of ${r.requests}`),
        target(
          `${r.name}: utilisation >= 95% of ${limit}/s`,
          r.utilisationPct,
          '>=',
          95,
          (v) => `${v}% (${r.opsPerSec}/s over ${r.fullWindows} full seconds)`,
        ),
      );
    }
    const s = row(SLUICE);
    const b = row(BOTTLENECK);
    targets.push(
      target(
        `${SLUICE}: no polling, Redis commands sent per request <= 1.1`,
        s.sentPerRequest,
        '<=',
        1.1,
        (v) => `${v.toFixed(2)} (bottleneck: ${b.sentPerRequest.toFixed(2)})`,
      ),
    );

    return {
      title: `Outbound: ${workers} worker processes x ${jobs} concurrent jobs for ${seconds} s per contestant, sharing ${limit} requests/s to one mock third party (fixed 1 s windows, 429 past the limit) through one local redis-server ${server.version}; contestants run one after the other`,
      rows,
      columns: [
        { key: 'requests', label: 'requests' },
        { key: 'maxPerSecond', label: 'max/s' },
        { key: 'utilisationPct', label: 'utilisation', format: (v) => `${v.toFixed(1)}%` },
        { key: 'rejected', label: '429s' },
        { key: 'overLimitSeconds', label: 's over' },
        { key: 'waitP50Ms', label: 'wait p50 ms' },
        { key: 'waitP99Ms', label: 'wait p99 ms' },
        { key: 'sentPerRequest', label: 'sent/req', format: (v) => v.toFixed(2) },
        { key: 'executedPerRequest', label: 'executed/req', format: (v) => v.toFixed(2) },
      ],
      sections: [
        { heading: 'Requests the third party saw per second (fixed 1 s windows, first and last partly covered)', lines: perSecondLines },
        { heading: 'Redis commands per request, by name', lines: mixLines },
      ],
      targets,
      notes: [
        `Configurations. sluice: createLimiter({ store: redisStore(ioredis), rules: gcra({ limit: ${limit}, period: '1s', burst: 1 }) }), then await limiter.wait('third-party', { maxWait: '30s' }) before each call: one reserve books the slot, then a timer until its start. bottleneck: new Bottleneck({ id, datastore: 'ioredis', clientOptions, minTime: ${Math.round(1000 / limit)} }) and limiter.schedule({ expiration: 30000 }, call): minTime = 1000 / N is what its README gives for "N requests per second", shared by all limiters with the same id in Clustering mode; reservoir refreshes are not used because its README asks for intervals that are multiples of 5000 ms when clustering.`,
        '"ns/op" and "ops/s" are the mean gap between requests and the requests per second the third party saw over the full seconds (every second but the first and the last); "utilisation" is those requests ÷ (limit × those seconds).',
        '"s over": seconds in which the third party saw more than the limit; "429s": its refusals. "wait": enqueue to send, every call of every worker (a closed loop: with all jobs queued, the wait is about jobs in the system ÷ rate).',
        '"sent/req": commands the workers\' Redis clients sent during the run ÷ requests (a poll would show here); "executed/req": INFO commandstats delta ÷ requests, calls made inside scripts included (bottleneck\'s heartbeats too).',
        'Both book slots exactly 1000 / N ms apart with no margin, as configured here; the third party counts arrivals. A call that leaves late (reply latency, a timer or the event loop late) followed by calls on time can put N + 1 in one second: a missed "s over" target by one is that (examples/outbound-workers books 10 per 1050 ms for it).',
        `Degraded sluice decisions (store failed, let through): ${s.degraded}. Failed calls: ${rows.map((r) => `${r.name} ${r.errors}`).join(', ')}.`,
      ],
      data: { limit, workers, jobs, seconds },
    };
  } finally {
    admin.disconnect();
    await mock.close();
    await server.stop();
  }
}

function mix(counts, requests) {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([name, calls]) => `${(calls / requests).toFixed(2)} ${name}`)
    .join(' + ');
}

async function commandStats(client) {
  const text = await client.info('commandstats');
  const calls = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]] = Number(match[2]);
  return calls;
}

/** Forks the workers, waits until all are connected and warm, starts them together, collects what they report. */
async function runContestant({ kind, id, workers, jobs, limit, seconds, port, mockPort, admin }) {
  const children = [];
  const results = [];
  try {
    const ready = [];
    const done = [];
    for (let i = 0; i < workers; i++) {
      const child = fork(WORKER, [kind, String(port), String(mockPort), String(jobs), String(limit), id], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: [],
      });
      children.push(child);
      const exited = new Promise((resolve, reject) => {
        child.once('error', reject);
        child.once('exit', (code, signal) =>
          code === 0 ? resolve() : reject(new Error(`${kind} worker ${i} exited with ${signal ?? code}`)),
        );
      });
      ready.push(Promise.race([new Promise((resolve) => child.once('message', resolve)), exited]));
      done.push(
        Promise.all([new Promise((resolve) => child.on('message', (m) => m.waits !== undefined && resolve(m))), exited]).then(([m]) =>
          results.push(m),
        ),
      );
    }
    const finished = Promise.all(done);
    finished.catch(() => {}); // awaited below; a crash before that is reported through `ready`
    await withTimeout(Promise.all(ready), 30_000, `${kind} workers did not get ready within 30 s`);
    const before = await commandStats(admin);
    const endAt = Date.now() + seconds * 1000;
    for (const child of children) child.send({ endAt });
    await withTimeout(finished, seconds * 1000 + 60_000, `${kind} workers did not finish`);
    const after = await commandStats(admin);
    const executed = {};
    for (const [name, calls] of Object.entries(after)) {
      const delta = calls - (before[name] ?? 0);
      if (delta > 0 && name !== 'info') executed[name] = delta;
    }
    const sent = {};
    for (const r of results) for (const [name, calls] of Object.entries(r.sent)) sent[name] = (sent[name] ?? 0) + calls;
    return {
      waits: results.flatMap((r) => r.waits),
      sent,
      executed,
      degraded: results.reduce((n, r) => n + r.degraded, 0),
      errorCount: results.reduce((n, r) => n + r.errorCount, 0),
      errorSamples: results.flatMap((r) => r.errors).slice(0, 3),
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function withTimeout(promise, ms, message) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
