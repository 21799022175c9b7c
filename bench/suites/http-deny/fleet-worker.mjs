// One instance of the deny list fleet (fleet.mjs's child): a limiter whose configuration, deny list included, comes
// from a redis-server through watchConfig, behind @sluice/http's handler on a loopback HTTP server. The client's
// address is the request's `ip` parameter (the bench's stand-in for a trusted proxy's header). It measures its own
// event loop (monitorEventLoopDelay, 1 ms resolution) between /reset and /stats, and its memory before and after the
// list is applied and compiled. Storage `document` hides the source's deny structure, so the list is the document's
// field, read and compiled whole on each change (the previous release's way): the contestant to beat.
//   node --expose-gc fleet-worker.mjs <redis-url> <name> <structure|document> <entries expected>
import { createServer } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLimiter, fixedWindow } from '@sluice/core';
import { watchConfig } from '@sluice/core/config';
import { createHandler, matchDenyList } from '@sluice/http';
import { memoryStore } from '@sluice/memory';
import { redisConfigSource } from '@sluice/redis';
import { Redis } from 'ioredis';

const [url, name, storage, expectedText] = process.argv.slice(2);
const expected = Number(expectedText);
const redis = new Redis(url);
const full = redisConfigSource(redis);
const source =
  storage === 'document'
    ? {
        read: (n) => full.read(n),
        write: (n, t) => full.write(n, t),
        replace: (n, r, t) => full.replace(n, r, t),
        remove: (n) => full.remove(n),
        subscribe: (n, f) => full.subscribe(n, f),
      }
    : full;

// The longest synchronous handling of a pushed change (its arrival, and the timer turns that parse, check and apply
// it) and the longest request
// (the first after a change applies it to the compiled matcher): the work itself, where the event loop's delay also
// counts the time the operating system gave other processes.
let applyMaxMs = 0;
let requestMaxMs = 0;
// The same two as the CPU time the process spent in them, which time given to other processes does not stretch.
let applyCpuMaxMs = 0;
let requestCpuMaxMs = 0;
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
// Pushed changes are applied on a timer turn after they arrive (config/watch-config.ts queues them), and a whole read
// continues on timer turns: every timer callback is timed too, as the same "applying" work.
const realSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = (callback, ms, ...args) =>
  realSetTimeout(() => {
    const t = performance.now();
    const c = cpuMs();
    try {
      callback(...args);
    } finally {
      applyCpuMaxMs = Math.max(applyCpuMaxMs, cpuMs() - c);
      applyMaxMs = Math.max(applyMaxMs, performance.now() - t);
    }
  }, ms);
if (storage === 'structure') {
  const subscribe = full.deny.subscribe.bind(full.deny);
  full.deny.subscribe = (n, onChange) =>
    subscribe(n, (text) => {
      const t = performance.now();
      const c = cpuMs();
      onChange(text);
      applyCpuMaxMs = Math.max(applyCpuMaxMs, cpuMs() - c);
      applyMaxMs = Math.max(applyMaxMs, performance.now() - t);
    });
}

const limiter = createLimiter({ name, store: memoryStore(), rules: fixedWindow({ limit: 1_000_000_000, window: '1h' }) });
const handler = createHandler({ limiter, denyList: matchDenyList });
const settle = () => {
  globalThis.gc();
  globalThis.gc();
};
settle();
const before = process.memoryUsage();
const started = performance.now();
const warnings = [];
const watcher = watchConfig(limiter, source, { onWarning: (warning) => warnings.push(warning.code) });
await watcher.ready;
while ((limiter.denyLineage?.size ?? limiter.deny.length) < expected) await new Promise((resolve) => setTimeout(resolve, 5));
// The first request compiles the matcher (a long first list at once).
await handler.run({ headers: {}, remoteAddress: '198.18.0.1' });
const loadMs = performance.now() - started;
settle();
const after = process.memoryUsage();

const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
const server = createServer(async (request, response) => {
  const query = new URL(request.url, 'http://x').searchParams;
  if (request.url.startsWith('/stats')) {
    response.end(
      JSON.stringify({
        maxMs: loop.max / 1e6,
        p99Ms: loop.percentile(99) / 1e6,
        applyMaxMs,
        requestMaxMs,
        applyCpuMaxMs,
        requestCpuMaxMs,
        entries: limiter.denyLineage?.size ?? limiter.deny.length,
        warnings,
      }),
    );
    return;
  }
  if (request.url.startsWith('/reset')) {
    loop.reset();
    applyMaxMs = 0;
    requestMaxMs = 0;
    applyCpuMaxMs = 0;
    requestCpuMaxMs = 0;
    response.end('{}');
    return;
  }
  const t = performance.now();
  const c = cpuMs();
  const result = await handler.run({ headers: {}, remoteAddress: query.get('ip') ?? '198.18.0.1' });
  requestCpuMaxMs = Math.max(requestCpuMaxMs, cpuMs() - c);
  requestMaxMs = Math.max(requestMaxMs, performance.now() - t);
  response.statusCode = result.status;
  response.end();
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(
    `${JSON.stringify({
      port: server.address().port,
      loadMs,
      entries: limiter.deny.length,
      rssBytes: after.rss - before.rss,
      heapBytes: after.heapUsed - before.heapUsed,
    })}\n`,
  );
});
process.on('SIGTERM', () => {
  void watcher.stop();
  server.close();
  redis.disconnect();
  process.exit(0);
});
