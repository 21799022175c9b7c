#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): starts a mock third party that allows
// 10 requests per second (fixed 1 s windows, 429 past it), a throwaway redis-server on a free port of 127.0.0.1,
// and 8 worker processes (worker.mjs) with 8 calls each to make, 2 at a time. Every call waits for its turn through
// limiter.schedule on one shared Redis store. Prints what the third party saw per second and per worker, stops
// everything it started and exits (1 if something did not behave as the README says).
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedisServer } from '../support/redis-server.mjs';
import { startThirdParty } from './third-party.mjs';
import { table } from '../support/table.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const LIMIT = 10; // per second, at the third party and in every worker's limiter
const WORKERS = 8;
const CALLS = 8; // per worker
const CONCURRENCY = 2; // calls in progress per worker

const watchdog = setTimeout(() => {
  console.error('outbound-workers: did not finish within 30 s');
  process.exit(1);
}, 30_000);
watchdog.unref();

const failures = [];
const expect = (ok, what) => {
  if (!ok) failures.push(what);
};

const thirdParty = await startThirdParty({ limit: LIMIT });
const redisServer = await startRedisServer({ name: 'outbound-workers' });
const children = [];
const ready = []; // workers that are warm; all get `go` together
try {
  console.log(`outbound-workers: third party on ${thirdParty.url} allows ${LIMIT} requests per second (fixed 1 s windows, 429 past it)`);
  console.log(`redis-server ${redisServer.version} on ${redisServer.host}:${redisServer.port} (started by this script)`);
  console.log(
    `${WORKERS} worker processes, ${CALLS} calls each, ${CONCURRENCY} at a time, all through limiter.schedule on gcra({ limit: ${LIMIT}, period: '1050ms', burst: 1 }) in Redis\n`,
  );

  const reports = await Promise.all(
    Array.from({ length: WORKERS }, (_, i) => {
      const name = `worker-${i + 1}`;
      const child = fork(join(here, 'worker.mjs'), [name, String(redisServer.port), thirdParty.url, String(CALLS), String(CONCURRENCY)], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      let report;
      child.on('message', (message) => {
        if (message.ready) ready.push(child);
        else report = message;
        if (ready.length === WORKERS) for (const c of ready.splice(0)) c.send({ go: true });
      });
      return new Promise((resolve, reject) => {
        child.once('error', reject);
        child.once('exit', (code, signal) =>
          code === 0 && report !== undefined ? resolve(report) : reject(new Error(`${name} exited with ${signal ?? code}`)),
        );
      });
    }),
  );

  // What the third party saw, per fixed 1 s window, from the first request's second to the last one's.
  const arrivals = thirdParty.arrivals;
  const first = Math.floor(arrivals[0].at / 1000);
  const last = Math.floor(arrivals[arrivals.length - 1].at / 1000);
  const rows = [['second', 'requests', '200', '429']];
  for (let s = first; s <= last; s++) {
    const inSecond = arrivals.filter((a) => Math.floor(a.at / 1000) === s);
    const ok = inSecond.filter((a) => a.status === 200).length;
    const note = s === first || s === last ? '(partly covered)' : '';
    rows.push([`${s - first + 1}`, inSecond.length, ok, inSecond.length - ok, note]);
    expect(inSecond.length <= LIMIT, `second ${s - first + 1}: ${inSecond.length} requests, over ${LIMIT}`);
  }
  for (const row of rows) if (row.length === 4) row.push('');
  const rejected = arrivals.filter((a) => a.status === 429).length;
  const spanSeconds = (arrivals[arrivals.length - 1].at - arrivals[0].at) / 1000;
  rows.push(['total', arrivals.length, arrivals.length - rejected, rejected, '']);
  console.log('What the third party saw, per second:');
  console.log(table(rows));
  console.log(
    `\n${arrivals.length} requests from the first to the last in ${spanSeconds.toFixed(2)} s: ${((arrivals.length - 1) / spanSeconds).toFixed(1)} per second; 429s: ${rejected} (expected 0)`,
  );

  console.log('\nPer worker:');
  const perWorker = [['worker', 'calls', '200', '429', 'longest wait']];
  for (const r of reports.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }))) {
    perWorker.push([
      r.name,
      (r.statuses[200] ?? 0) + (r.statuses[429] ?? 0),
      r.statuses[200] ?? 0,
      r.statuses[429] ?? 0,
      `${(r.longestWaitMs / 1000).toFixed(1)} s`,
    ]);
  }
  console.log(table(perWorker));

  expect(arrivals.length === WORKERS * CALLS, `the third party saw ${arrivals.length} requests, not ${WORKERS * CALLS}`);
  expect(rejected === 0, `${rejected} requests were refused with 429`);
  // Booked 100 ms apart: the n requests span about (n - 1) / 10 seconds, so about 10 per second.
  expect(
    Math.abs((arrivals.length - 1) / spanSeconds - LIMIT) <= LIMIT * 0.1,
    `${arrivals.length} requests in ${spanSeconds} s is not about ${LIMIT} per second`,
  );
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await thirdParty.close();
  await redisServer.stop();
}

if (failures.length > 0) {
  console.log(`\nNOT as the README says:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  process.exitCode = 1;
} else {
  console.log('\nno second over the limit, no 429: everything behaved as the README says');
}
