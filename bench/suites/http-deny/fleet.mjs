// Child process (run with tsx, for the test harness's startRedis): a fleet of instances (fleet-worker.mjs, one
// process each) with a 100,000-entry deny list on a real redis-server, changed the way operators change it, judged
// from outside: the parent's wall clock from the start of each write until every instance answers the changed client
// (403 after an add, 200 after a removal), each instance's own longest event-loop delay while the change applies, and
// the latency of an allowed client probing every instance throughout. Twice: with the list in the Redis source's own
// structure (each change one entry), and as the document's field (each change rewrites and re-reads the whole list,
// the previous release's storage), the contestant to beat. Also the memory an instance holds for the list.
//   node --import tsx bench/suites/http-deny/fleet.mjs [instances] [changes]
import { spawn } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { fileURLToPath } from 'node:url';
import { addDenyEntries, addDenyEntry, removeDenyEntry, writeLimiterConfig } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { Redis } from 'ioredis';
import { startRedis } from '../../../test/harness/redis.ts';
import { reply } from '../../lib/child.mjs';
import { denyEntries } from './entries.mjs';

const INSTANCES = Number(process.argv[2] ?? 4);
const CHANGES = Number(process.argv[3] ?? 20);
const ENTRIES = 100_000;
const BULK = 1_000;
const NAME = 'bench';
const WORKER = fileURLToPath(new URL('./fleet-worker.mjs', import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The document path's source: the Redis source with its deny structure hidden. */
const documentOnly = (full) => ({
  read: (n) => full.read(n),
  write: (n, t) => full.write(n, t),
  replace: (n, r, t) => full.replace(n, r, t),
  remove: (n) => full.remove(n),
});

function startWorker(url, storage, expected) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', WORKER, url, NAME, storage, String(expected)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`a ${storage} instance did not start within 180 s`)), 180_000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const line = out.indexOf('\n');
      if (line === -1) return;
      clearTimeout(timer);
      resolve({ child, ...JSON.parse(out.slice(0, line)) });
    });
    child.once('exit', (code, signal) => {
      reject(new Error(`a ${storage} instance exited with ${signal ?? code} before it started`));
    });
  });
}

/** One GET on a connection of its own (no keep-alive: a pooled connection the server closes races the next request). */
function get(port, path) {
  return new Promise((resolve, reject) => {
    const request = httpGet({ host: '127.0.0.1', port, path, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode, body }));
    });
    request.once('error', reject);
  });
}

/** Polls every instance with `ip` until each answers `status`; ms from `t0` per instance. */
async function pickUp(workers, ip, status, t0) {
  return Promise.all(
    workers.map(async (worker) => {
      for (;;) {
        const answer = await get(worker.port, `/?ip=${ip}`);
        if (answer.status === status) return performance.now() - t0;
        if (performance.now() - t0 > 30_000) throw new Error(`an instance did not answer ${status} for ${ip} within 30 s`);
        await sleep(1);
      }
    }),
  );
}

async function blocks(workers) {
  const stats = await Promise.all(workers.map(async (worker) => JSON.parse((await get(worker.port, '/stats')).body)));
  return stats;
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

async function runFleet(storage) {
  const server = await startRedis();
  const url = `redis://${server.host}:${server.port}`;
  const redis = new Redis(url);
  const full = redisConfigSource(redis);
  const writer = storage === 'structure' ? full : documentOnly(full);
  const workers = [];
  let probing = false;
  let prober = Promise.resolve();
  try {
    const entries = denyEntries(ENTRIES);
    if (storage === 'structure') await addDenyEntries(writer, NAME, entries);
    else await writeLimiterConfig(writer, NAME, { deny: entries.map((entry) => ({ ...entry, addedAt: Date.now() })) });
    for (let i = 0; i < INSTANCES; i++) workers.push(await startWorker(url, storage, ENTRIES));

    // An allowed client probing every instance in turn, throughout; latencies kept with their start time.
    const probes = [];
    probing = true;
    prober = (async () => {
      for (let i = 0; probing; i++) {
        const worker = workers[i % workers.length];
        const t = performance.now();
        const answer = await get(worker.port, `/?ip=198.18.${(i >> 8) & 255}.${i & 255}`);
        if (answer.status !== 200) throw new Error(`the allowed client got ${answer.status}`);
        probes.push([t, performance.now() - t]);
        await sleep(2);
      }
    })();

    // Idle: the floor of each instance's event-loop delay with the list held and nothing changing.
    await Promise.all(workers.map((worker) => get(worker.port, '/reset')));
    const idleFrom = performance.now();
    await sleep(2_000);
    const idle = await blocks(workers);
    const idleProbes = probes.filter(([t]) => t >= idleFrom).map(([, ms]) => ms);

    const single = { writeMs: [], pickupMs: [], blockMs: [], applyMs: [], requestMs: [], applyCpuMs: [], requestCpuMs: [], probeMs: [] };
    for (let k = 0; k < CHANGES; k++) {
      const ip = `198.51.100.${(k >> 1) + 1}`;
      await Promise.all(workers.map((worker) => get(worker.port, '/reset')));
      const t0 = performance.now();
      const add = k % 2 === 0;
      if (add) await addDenyEntry(writer, NAME, { match: ip, reason: 'bench' }, { maxEntries: 2 * ENTRIES });
      else if (!(await removeDenyEntry(writer, NAME, ip))) throw new Error(`${ip} was not on the list`);
      single.writeMs.push(performance.now() - t0);
      single.pickupMs.push(...(await pickUp(workers, ip, add ? 403 : 200, t0)));
      await sleep(100);
      const stats = await blocks(workers);
      single.blockMs.push(...stats.map((stat) => stat.maxMs));
      single.applyMs.push(...stats.map((stat) => stat.applyMaxMs));
      single.requestMs.push(...stats.map((stat) => stat.requestMaxMs));
      single.applyCpuMs.push(...stats.map((stat) => stat.applyCpuMaxMs));
      single.requestCpuMs.push(...stats.map((stat) => stat.requestCpuMaxMs));
      single.probeMs.push(...probes.filter(([t]) => t >= t0).map(([, ms]) => ms));
    }

    await Promise.all(workers.map((worker) => get(worker.port, '/reset')));
    const bulkFrom = performance.now();
    const bulkEntries = Array.from({ length: BULK }, (_, i) => ({ match: `user:bulk-${i}`, reason: 'feed' }));
    if (storage === 'structure') await addDenyEntries(writer, NAME, bulkEntries);
    else await addDenyEntries(writer, NAME, bulkEntries, { maxEntries: 2 * ENTRIES });
    const bulkWriteMs = performance.now() - bulkFrom;
    for (;;) {
      const stats = await blocks(workers);
      if (stats.every((stat) => stat.entries === ENTRIES + BULK)) break;
      if (performance.now() - bulkFrom > 60_000) throw new Error('the 1,000-entry change did not reach every instance in 60 s');
      await sleep(5);
    }
    const bulkPickupMs = performance.now() - bulkFrom;
    await sleep(100);
    const bulkStats = await blocks(workers);
    const bulkBlocks = bulkStats.map((stat) => stat.maxMs);
    const bulkProbes = probes.filter(([t]) => t >= bulkFrom).map(([, ms]) => ms);
    probing = false;
    await prober;
    const warnings = (await blocks(workers)).flatMap((stat) => stat.warnings);
    return {
      storage,
      instances: INSTANCES,
      loadMs: percentile(
        workers.map((w) => w.loadMs),
        50,
      ),
      rssMiB: percentile(
        workers.map((w) => w.rssBytes / 2 ** 20),
        50,
      ),
      heapMiB: percentile(
        workers.map((w) => w.heapBytes / 2 ** 20),
        50,
      ),
      idle: {
        blockMaxMs: Math.max(...idle.map((s) => s.maxMs)),
        requestMaxMs: Math.max(...idle.map((s) => s.requestMaxMs)),
        requestCpuMaxMs: Math.max(...idle.map((s) => s.requestCpuMaxMs)),
        probeP99Ms: percentile(idleProbes, 99),
        probeMaxMs: Math.max(...idleProbes),
      },
      single: {
        changes: CHANGES,
        writeMedianMs: percentile(single.writeMs, 50),
        pickupMedianMs: percentile(single.pickupMs, 50),
        pickupMaxMs: Math.max(...single.pickupMs),
        blockMaxMs: Math.max(...single.blockMs),
        blockMedianMs: percentile(single.blockMs, 50),
        applyMaxMs: Math.max(...single.applyMs),
        applyMedianMs: percentile(single.applyMs, 50),
        requestMaxMs: Math.max(...single.requestMs),
        applyCpuMaxMs: Math.max(...single.applyCpuMs),
        requestCpuMaxMs: Math.max(...single.requestCpuMs),
        probeP99Ms: percentile(single.probeMs, 99),
        probeMaxMs: Math.max(...single.probeMs),
      },
      bulk: {
        entries: BULK,
        writeMs: bulkWriteMs,
        pickupMs: bulkPickupMs,
        blockMaxMs: Math.max(...bulkBlocks),
        applyMaxMs: Math.max(...bulkStats.map((stat) => stat.applyMaxMs)),
        requestMaxMs: Math.max(...bulkStats.map((stat) => stat.requestMaxMs)),
        applyCpuMaxMs: Math.max(...bulkStats.map((stat) => stat.applyCpuMaxMs)),
        requestCpuMaxMs: Math.max(...bulkStats.map((stat) => stat.requestCpuMaxMs)),
        probeP99Ms: percentile(bulkProbes, 99),
        probeMaxMs: Math.max(...bulkProbes),
      },
      warnings: [...new Set(warnings)],
    };
  } finally {
    probing = false;
    await prober.catch(() => {});
    for (const worker of workers) worker.child.kill('SIGTERM');
    redis.disconnect();
    await server.stop();
  }
}

const structure = await runFleet('structure');
const document = await runFleet('document');
reply({ entries: ENTRIES, structure, document });
