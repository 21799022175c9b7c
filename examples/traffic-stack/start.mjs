#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): starts a throwaway redis-server on a
// free port, the app (server.mjs: Express with the whole trafficStack) in a process of its own, then overloads it
// from here for a bounded time with a mix of the four priority classes. Prints what each class got, overall and
// per phase (before, during and after the overload), draws it to traffic-stack.svg, stops everything and exits
// (1 if something did not behave as the README says).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { CLASSES, WORK_MS } from './app.mjs';
import { renderChart } from './chart.mjs';
import { startRedisServer } from '../support/redis-server.mjs';
import { table } from '../support/table.mjs';

const watchdog = setTimeout(() => {
  console.error('traffic-stack: did not finish within 35 s');
  process.exit(1);
}, 35_000);
watchdog.unref();

const BUCKET_MS = 250;
/** The load, in requests per second per class, and when. Each class's traffic comes from many API keys. */
const PHASES = [
  { name: 'before', from: 0, to: 2500, rates: { critical: 4, write: 4, read: 8, test: 4 } },
  { name: 'overload', from: 2500, to: 8500, rates: { critical: 20, write: 40, read: 80, test: 60 } },
  { name: 'after', from: 8500, to: 15_500, rates: { critical: 4, write: 4, read: 8, test: 4 } },
];
const END_MS = PHASES.at(-1).to;
/**
 * Plus, throughout, two test-mode scripts gone wrong (test traffic, counted apart): one in a tight loop, LOOP_RATE
 * requests a second on one key (the rate layer's case); one forking BATCH jobs at once every BATCH_EVERY_MS (the
 * concurrency layer's case).
 */
const SCRIPTS = {
  'loop-script': { key: 'sk_test_loop', every: 1000 / 30, burst: 1 },
  'batch-script': { key: 'sk_test_batch', every: 1000, burst: 10 },
};
/** Who sends each class, and what it calls (the app derives the class from the key and the call). */
const LIVE_KEYS = Array.from({ length: 40 }, (_, i) => `sk_live_shop${String(i + 1).padStart(2, '0')}`);
const TEST_KEYS = Array.from({ length: 20 }, (_, i) => `sk_test_shop${String(i + 1).padStart(2, '0')}`);
const TRAFFIC = {
  critical: { method: 'POST', path: '/charges', keys: LIVE_KEYS },
  write: { method: 'POST', path: '/customers', keys: LIVE_KEYS },
  read: { method: 'GET', path: '/charges', keys: LIVE_KEYS },
  test: { method: 'POST', path: '/charges', keys: TEST_KEYS },
};
const MAX_REQUESTS = 5000; // a hard bound on what this script sends

const failures = [];
const expect = (ok, what) => {
  if (!ok) failures.push(what);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const pct = (part, whole) => (whole === 0 ? '-' : `${Math.round((100 * part) / whole)}%`);
const quantile = (values, q) => {
  if (values.length === 0) return '-';
  const sorted = [...values].sort((a, b) => a - b);
  return String(Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]));
};

const redisServer = await startRedisServer({ name: 'traffic-stack' });
const redisUrl = `redis://${redisServer.host}:${redisServer.port}`;
const app = fork(fileURLToPath(new URL('./server.mjs', import.meta.url)), [], {
  env: { ...process.env, REDIS_URL: redisUrl },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const appExited = once(app, 'exit');
process.once('exit', () => app.exitCode === null && app.signalCode === null && app.kill('SIGKILL'));
const [hello] = await Promise.race([
  once(app, 'message'),
  appExited.then(([code]) => {
    throw new Error(`the app exited with code ${code} before listening`);
  }),
]);
const { port } = hello;

const agent = new Agent({ keepAlive: true, maxSockets: 256 });
/** @type {{ cls: string, script: string | undefined, sentAt: number, status: number, refusedBy: string | undefined, latency: number, amount: number | undefined }[]} */
const records = [];
let t0 = 0;

function send(cls, key, script = undefined) {
  const { method, path } = TRAFFIC[cls];
  const sentAt = performance.now() - t0;
  return new Promise((resolve) => {
    const done = (status, body, headers) => {
      let refusedBy;
      if (status === 429 || status === 503) {
        try {
          refusedBy = JSON.parse(body).refusedBy ?? 'rate'; // the rate layer answers with its own problem body
        } catch {
          refusedBy = 'unknown';
        }
      }
      const amount = Number(headers?.['x-worker-shedding']);
      records.push({
        cls,
        script,
        sentAt,
        status,
        refusedBy,
        latency: performance.now() - t0 - sentAt,
        amount: Number.isFinite(amount) ? amount : undefined,
      });
      resolve();
    };
    const req = request(
      { host: '127.0.0.1', port, method, path, agent, headers: { 'x-api-key': key, 'content-length': '0' }, timeout: 10_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => done(res.statusCode, body, res.headers));
        res.on('error', () => done(0, '', undefined));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => done(0, '', undefined));
    req.end();
  });
}

let exitCode = 0;
try {
  console.log(
    `traffic-stack: Express app in its own process (pid ${app.pid}) on http://127.0.0.1:${port}, redis-server ${redisServer.version} on ${redisServer.host}:${redisServer.port} (started by this script)`,
  );
  console.log('the stack, in the order it asks (app.mjs):');
  console.log(
    table([
      ['layer', 'refuses', 'what'],
      ['rate', '429', 'token bucket per API key: bursts of 20, 10/s (Redis)'],
      ['concurrency', '429', '6 in flight per API key (Redis leases)'],
      ['fleet', '503', '30 in flight in all, 40% kept for critical: critical 30, write 26, read 22, test 18 (Redis leases)'],
      ['worker', '503', "this process's event loop: 1 s saturated before the first shed, then 4 s to shed all but critical"],
    ]),
  );
  console.log(`the handler: ${WORK_MS} ms of CPU per admitted request`);
  const describeRates = (rates) => CLASSES.map((c) => `${c} ${rates[c]}`).join(', ');
  for (const phase of PHASES)
    console.log(`load ${phase.name.padEnd(8)} ${phase.from / 1000}-${phase.to / 1000} s: ${describeRates(phase.rates)} requests/s`);
  console.log(
    'plus, throughout, two test-mode scripts gone wrong: loop-script (sk_test_loop) 30 requests/s, batch-script (sk_test_batch) 10 at once every second\n',
  );

  // The load: open loop (arrivals do not wait for answers, as real clients don't), evenly spaced per class.
  const pending = [];
  const due = Object.fromEntries(CLASSES.map((c) => [c, 0]));
  const nextKey = Object.fromEntries(CLASSES.map((c) => [c, 0]));
  const nextBurst = Object.fromEntries(Object.keys(SCRIPTS).map((name) => [name, 0]));
  t0 = performance.now();
  let last = 0;
  for (let now = 0; now < END_MS && pending.length < MAX_REQUESTS; now = performance.now() - t0) {
    const phase = PHASES.find((p) => now >= p.from && now < p.to);
    const dt = now - last;
    last = now;
    for (const cls of CLASSES) {
      due[cls] += (phase.rates[cls] * dt) / 1000;
      for (; due[cls] >= 1; due[cls]--) {
        const { keys } = TRAFFIC[cls];
        pending.push(send(cls, keys[nextKey[cls]++ % keys.length]));
      }
    }
    for (const [name, { key, every, burst }] of Object.entries(SCRIPTS)) {
      for (; nextBurst[name] <= now; nextBurst[name] += every) {
        for (let i = 0; i < burst; i++) pending.push(send('test', key, name));
      }
    }
    await sleep(5);
  }
  await Promise.all(pending);
  agent.destroy();

  // Whole run, per class (the two scripts apart: they are test traffic, but their 429s are their own doing).
  const phaseOf = (r) => PHASES.find((p) => r.sentAt >= p.from && r.sentAt < p.to)?.name ?? PHASES.at(-1).name;
  const count = (list, f) => list.filter(f).length;
  const rows = [['class', 'sent', '2xx', '429 rate', '429 concurrency', '503 fleet', '503 worker', 'other', 'admitted']];
  const summarize = (list) => {
    const ok = count(list, (r) => r.status >= 200 && r.status < 300);
    const by = (status, layer) => count(list, (r) => r.status === status && r.refusedBy === layer);
    const known = ok + by(429, 'rate') + by(429, 'concurrency') + by(503, 'fleet') + by(503, 'worker');
    return [
      list.length,
      ok,
      by(429, 'rate'),
      by(429, 'concurrency'),
      by(503, 'fleet'),
      by(503, 'worker'),
      list.length - known,
      pct(ok, list.length),
    ];
  };
  const regular = records.filter((r) => r.script === undefined);
  for (const cls of CLASSES) rows.push([cls, ...summarize(regular.filter((r) => r.cls === cls))]);
  for (const name of Object.keys(SCRIPTS)) rows.push([name, ...summarize(records.filter((r) => r.script === name))]);
  console.log(`whole run: ${records.length} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`${table(rows)}\n`);

  const phaseRows = [['phase', 'class', 'sent', '2xx', '429', '503', 'admitted', 'p50 ms', 'p95 ms']];
  const share = {};
  for (const phase of PHASES) {
    for (const cls of CLASSES) {
      const list = regular.filter((r) => r.cls === cls && phaseOf(r) === phase.name);
      const ok = list.filter((r) => r.status >= 200 && r.status < 300);
      share[`${phase.name} ${cls}`] = list.length === 0 ? 0 : ok.length / list.length;
      const latencies = ok.map((r) => r.latency);
      phaseRows.push([
        phase.name,
        cls,
        list.length,
        ok.length,
        count(list, (r) => r.status === 429),
        count(list, (r) => r.status === 503),
        pct(ok.length, list.length),
        quantile(latencies, 0.5),
        quantile(latencies, 0.95),
      ]);
    }
  }
  console.log('per phase (p50 and p95: latency of the admitted requests)');
  console.log(`${table(phaseRows)}\n`);

  const during = (cls) => Math.round(100 * share[`overload ${cls}`]);
  const shedDuring = count(regular, (r) => r.cls === 'test' && phaseOf(r) === 'overload' && r.status === 503);
  console.log(
    `during the overload: critical ${during('critical')}% admitted, write ${during('write')}%, read ${during('read')}%, test ${during('test')}% (${shedDuring} test requests shed)`,
  );
  const amounts = records.filter((r) => r.amount !== undefined);
  const peak = Math.max(...amounts.map((r) => r.amount));
  amounts.sort((a, b) => a.sentAt - b.sentAt);
  const amountAt = (ms) => amounts.findLast((r) => r.sentAt < ms)?.amount ?? Number.NaN;
  const overloadFrom = PHASES.find((p) => p.name === 'overload').from;
  console.log(
    `worker shedding amount: ${amountAt(overloadFrom).toFixed(2)} when the overload began, peak ${peak.toFixed(2)}, ${amountAt(END_MS).toFixed(2)} at the end (below 0: at rest, 1: all but critical shed)`,
  );

  expect(
    records.every((r) => r.status !== 0),
    'every request got an answer',
  );
  expect(
    share['before critical'] === 1 && share['before write'] === 1 && share['before read'] === 1 && share['before test'] === 1,
    'before the overload every regular request is admitted',
  );
  expect(shedDuring > 0, 'test traffic is shed during the overload');
  expect(share['overload critical'] >= 0.9, 'critical traffic is still admitted during the overload (90% or more)');
  expect(
    share['overload critical'] > share['overload test'] + 0.3,
    'critical is admitted at a clearly higher rate than test during the overload',
  );
  expect(count(regular, (r) => r.refusedBy === 'rate') === 0, 'the regular keys are never rate limited');
  expect(count(records, (r) => r.script === 'loop-script' && r.refusedBy === 'rate') > 0, 'the loop script is rate limited (429)');
  expect(
    count(records, (r) => r.script === 'batch-script' && r.refusedBy === 'concurrency') > 0,
    "the batch script's extra jobs are refused by the concurrency layer (429)",
  );

  // The chart.
  const buckets = new Map(
    CLASSES.map((c) => [c, Array.from({ length: Math.ceil(END_MS / BUCKET_MS) }, () => ({ admitted: 0, limited: 0, shed: 0 }))]),
  );
  const amountSums = Array.from({ length: Math.ceil(END_MS / BUCKET_MS) }, () => ({ sum: 0, n: 0 }));
  for (const r of records) {
    const k = Math.min(Math.floor(r.sentAt / BUCKET_MS), amountSums.length - 1);
    const b = buckets.get(r.cls)[k];
    if (r.status >= 200 && r.status < 300) b.admitted++;
    else if (r.status === 429) b.limited++;
    else b.shed++;
    if (r.amount !== undefined) {
      amountSums[k].sum += r.amount;
      amountSums[k].n++;
    }
  }
  const svg = renderChart({
    classes: CLASSES,
    bucketMs: BUCKET_MS,
    endMs: END_MS,
    phases: PHASES,
    buckets,
    amounts: amountSums.map(({ sum, n }) => (n === 0 ? undefined : sum / n)),
    title: 'trafficStack under overload: what each priority class got',
    notes: { test: 'with the scripts' },
  });
  const chartPath = fileURLToPath(new URL('./traffic-stack.svg', import.meta.url));
  writeFileSync(chartPath, svg);
  console.log(`chart: ${chartPath}`);
} catch (error) {
  console.log(`UNEXPECTED: ${error?.stack ?? error}`);
  exitCode = 1;
} finally {
  // Stop the app (it closes its server and Redis client), then check no lease was left behind, then stop Redis.
  if (app.connected) app.send({ type: 'stop' });
  const stopped = await Promise.race([appExited.then(() => true), sleep(3000).then(() => false)]);
  if (!stopped) {
    app.kill('SIGKILL');
    await appExited;
  }
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const leaseKeys = await redis.keys('*:lease');
  let held = 0;
  for (const key of leaseKeys) held += await redis.zcard(key);
  console.log(`leases left in Redis after the run: ${held} (lease keys: ${leaseKeys.length})`);
  expect(held === 0, 'every lease was released');
  await redis.quit();
  await redisServer.stop();
}

console.log('');
if (failures.length > 0 || exitCode !== 0) {
  for (const what of failures) console.log(`UNEXPECTED: not true that ${what}`);
  process.exitCode = 1;
} else {
  console.log('everything behaved as the README says');
}
