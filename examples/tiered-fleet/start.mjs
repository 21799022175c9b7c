#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): starts a throwaway redis-server on a
// free port of 127.0.0.1, then for each strategy of @sluice/tiered in turn (deny-cache, lease, async) four app
// processes (app.mjs) behind a round-robin proxy (proxy.mjs), and drives two 1 s windows of traffic at them
// (load.mjs): one hot identity far over its limit, four cold ones under it. Prints what each process admitted,
// what reached Redis, and what the fleet admitted for the hot identity per window against the limit; stops every
// process it started (by pid) and the redis-server, and exits (1 if something did not behave as the README says).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { runLoad } from './load.mjs';
import { startProxy } from './proxy.mjs';
import { startRedisServer } from '../support/redis-server.mjs';
import { table } from '../support/table.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const STRATEGIES = ['deny-cache', 'lease', 'async'];
const HOT = 'hot';
const COLD = ['cold-1', 'cold-2', 'cold-3', 'cold-4'];
const WINDOWS = 2; // full windows of traffic per strategy
const MAX_REQUESTS = 10_000; // per strategy, whichever of this and the time comes first
const CONCURRENCY = 8;
/** app.mjs sets async.maxUnsynced to this: the async strategy's over-admission bound is instances × it per window. */
const ASYNC_MAX_UNSYNCED = 20;

const watchdog = setTimeout(() => {
  console.error('tiered-fleet: did not finish within 35 s');
  process.exit(1);
}, 35_000);
watchdog.unref();

const failures = [];
const expect = (ok, what) => {
  if (!ok) failures.push(what);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sum = (values) => values.reduce((a, b) => a + b, 0);

const clock = (ms) => new Date(ms).toISOString().slice(11, 23);

/** Every app process this script started and has not seen exit: killed by pid if the script stops early. */
const live = new Set();

/** Starts the four app processes for one strategy; resolves once each listens. */
async function startFleet(strategy, redisPort) {
  const apps = [];
  for (let i = 1; i <= 4; i++) {
    const name = `app-${i}`;
    const child = fork(join(here, 'app.mjs'), [], {
      env: { ...process.env, TIER_STRATEGY: strategy, REDIS_PORT: String(redisPort), APP_NAME: name },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    live.add(child);
    const exited = once(child, 'exit').then(([code, signal]) => {
      live.delete(child);
      return { code, signal };
    });
    // An app process should print nothing; whatever it does print is passed on, marked with its name.
    child.stdout.on('data', (chunk) => process.stdout.write(`[${name}] ${chunk}`));
    child.stderr.on('data', (chunk) => process.stderr.write(`[${name}] ${chunk}`));
    apps.push({ name, child, exited });
  }
  await Promise.all(
    apps.map(async (app) => {
      const ready = new Promise((resolve, reject) => {
        app.child.once('message', resolve);
        app.exited.then(({ code }) => reject(new Error(`${app.name} exited with code ${code} before it was ready`)));
      });
      const message = await Promise.race([
        ready,
        sleep(10_000).then(() => Promise.reject(new Error(`${app.name} was not ready within 10 s`))),
      ]);
      Object.assign(app, message);
    }),
  );
  return apps;
}

/** Asks every app to close (its tier returns leases and flushes counts) and collects its report; each must exit by itself. */
async function closeFleet(apps) {
  return Promise.all(
    apps.map(async (app) => {
      const report = new Promise((resolve) => app.child.once('message', resolve));
      app.child.send({ type: 'close' });
      const outcome = await Promise.race([Promise.all([report, app.exited]), sleep(5000).then(() => 'timeout')]);
      if (outcome === 'timeout') {
        expect(false, `${app.name} (pid ${app.child.pid}) exits by itself after close`);
        app.killed = true;
        if (app.child.exitCode === null && app.child.signalCode === null) process.kill(app.child.pid, 'SIGKILL');
        await app.exited;
        return { name: app.name, tally: {}, perWindow: {}, degraded: 0, stats: {} };
      }
      const [message, { code, signal }] = outcome;
      expect(code === 0, `${app.name} exits with code 0 (got ${code ?? signal})`);
      return message;
    }),
  );
}

/** INFO commandstats as a map: command -> calls. */
async function commandStats(admin) {
  const info = await admin.info('commandstats');
  const calls = new Map();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1], Number(m[2]));
  return calls;
}

const SCRIPT_COMMANDS = new Set(['fcall', 'fcall_ro', 'evalsha', 'evalsha_ro', 'eval', 'eval_ro']);

const redisServer = await startRedisServer({ name: 'tiered-fleet' });
const admin = new Redis({ host: redisServer.host, port: redisServer.port, lazyConnect: true });
const results = [];
let proxy;
try {
  await admin.connect();
  const first = await startFleet(STRATEGIES[0], redisServer.port);
  const { limit, windowMs, instances } = first[0];
  console.log(
    `tiered-fleet: redis-server ${redisServer.version} on ${redisServer.host}:${redisServer.port} (pid ${redisServer.pid}, started by this script)`,
  );
  console.log(
    `rule: fixedWindow({ limit: ${limit}, window: ${windowMs} ms }) per identity, enforced by ${instances} app processes together, each with its own ioredis client, redisStore and tieredStore({ instances: ${instances} })`,
  );
  console.log(
    `traffic: ${CONCURRENCY} clients back to back through a round-robin proxy for ${WINDOWS} windows (at most ${MAX_REQUESTS} requests): 24 of 25 requests are "${HOT}", 1 of 25 one of ${COLD.join(', ')} in turn`,
  );
  console.log(
    "what reached Redis: script calls (fcall/evalsha) from INFO commandstats deltas, and the sum of the processes' tier.stats().remoteCalls\n",
  );

  for (const strategy of STRATEGIES) {
    const before = await commandStats(admin);
    const apps = strategy === STRATEGIES[0] ? first : await startFleet(strategy, redisServer.port);
    proxy = await startProxy(apps.map((app) => app.port));
    // Start on a window boundary (Redis runs on this machine's clock), so the windows below are whole.
    const startAt = Math.ceil((Date.now() + 20) / windowMs) * windowMs;
    await sleep(startAt - Date.now());
    const load = await runLoad({
      port: proxy.port,
      hot: HOT,
      cold: COLD,
      until: startAt + WINDOWS * windowMs,
      maxRequests: MAX_REQUESTS,
      concurrency: CONCURRENCY,
    });
    const elapsed = Date.now() - startAt;
    const forwarded = proxy.forwarded;
    await proxy.close();
    proxy = undefined;
    const reports = await closeFleet(apps);
    const after = await commandStats(admin);

    // What reached Redis during this run (the admin client's own INFO calls left out).
    const delta = [...after].map(([cmd, n]) => [cmd, n - (before.get(cmd) ?? 0)]).filter(([cmd, n]) => n > 0 && cmd !== 'info');
    const scriptCalls = sum(delta.filter(([cmd]) => SCRIPT_COMMANDS.has(cmd)).map(([, n]) => n));
    const remoteCalls = sum(reports.map((r) => r.stats.remoteCalls ?? 0));

    console.log(`== strategy '${strategy}': ${load.sent} requests in ${(elapsed / 1000).toFixed(2)} s`);
    const rows = [
      [
        'process',
        'via proxy',
        '200',
        '429',
        'hot 200',
        'local answers',
        'deny-cache hits',
        'remoteCalls',
        'degraded',
        strategy === 'async' ? 'flushed / over-admitted units' : 'leased / returned / dropped units',
      ],
    ];
    for (const [i, r] of reports.entries()) {
      const tallies = Object.values(r.tally);
      const s = r.stats;
      const extra =
        strategy === 'async' ? `${s.flushedUnits} / ${s.overAdmittedUnits}` : `${s.leasedUnits} / ${s.returnedUnits} / ${s.droppedUnits}`;
      rows.push([
        r.name,
        forwarded[i],
        sum(tallies.map((t) => t.admitted)),
        sum(tallies.map((t) => t.limited)),
        r.tally[HOT]?.admitted ?? 0,
        s.local,
        s.denyCacheHits,
        s.remoteCalls,
        r.degraded,
        extra,
      ]);
    }
    const col = (k) => sum(rows.slice(1).map((row) => row[k]));
    const fleetExtra =
      strategy === 'async'
        ? `${sum(reports.map((r) => r.stats.flushedUnits))} / ${sum(reports.map((r) => r.stats.overAdmittedUnits))}`
        : ['leasedUnits', 'returnedUnits', 'droppedUnits'].map((k) => sum(reports.map((r) => r.stats[k]))).join(' / ');
    rows.push(['fleet', col(1), col(2), col(3), col(4), col(5), col(6), col(7), col(8), fleetExtra]);
    console.log(table(rows));
    delta.sort(([, a], [, b]) => b - a);
    console.log(`  Redis: ${scriptCalls} script calls for ${load.sent} requests; remoteCalls summed over the processes: ${remoteCalls}`);
    console.log(`  INFO commandstats delta: ${delta.map(([cmd, n]) => `${cmd} ${n}`).join(', ')} (commands a script runs count too)`);

    // The hot identity, fleet-wide, per window of the Redis clock.
    const windows = new Map();
    for (const r of reports) {
      for (const [start, n] of Object.entries(r.perWindow[HOT] ?? {})) {
        const w = windows.get(Number(start)) ?? new Map();
        windows.set(Number(start), w);
        w.set(r.name, n);
      }
    }
    const bound = strategy === 'async' ? limit + instances * ASYNC_MAX_UNSYNCED : limit;
    console.log(
      `  "${HOT}" admitted by the fleet per ${windowMs} ms window (limit ${limit}${strategy === 'async' ? `; async's bound: limit + instances × maxUnsynced = ${bound}` : ''}):`,
    );
    const windowRows = [['window (Redis clock)', 'admitted', 'vs limit', 'by process']];
    let maxPerWindow = 0;
    for (const [start, w] of [...windows].sort(([a], [b]) => a - b)) {
      const total = sum([...w.values()]);
      const whole = start >= startAt && start < startAt + WINDOWS * windowMs;
      if (whole) maxPerWindow = Math.max(maxPerWindow, total);
      const verdict = total <= limit ? `ok (${limit - total} under)` : `OVER by ${total - limit}`;
      windowRows.push([
        `${clock(start)}-${clock(start + windowMs)}${whole ? '' : ' (tail)'}`,
        total,
        verdict,
        [...w]
          .sort()
          .map(([name, n]) => `${name} ${n}`)
          .join(', '),
      ]);
      expect(total <= bound, `'${strategy}': "${HOT}" admitted at most ${bound} in the window from ${clock(start)} (got ${total})`);
    }
    console.log(table(windowRows));
    const exits = apps.map(
      (a) => `${a.name} (pid ${a.child.pid}) ${a.killed ? 'killed by this script' : `exit code ${a.child.exitCode ?? a.child.signalCode}`}`,
    );
    console.log(
      `  closed: each process awaited tier.close() (counts flushed, leases let go), quit its Redis client and exited by itself: ${exits.join(', ')}`,
    );
    console.log('');

    // What the README says about this run.
    const hotStatuses = load.statuses.get(HOT) ?? new Map();
    expect(load.errors === 0, `'${strategy}': every request got an answer`);
    expect((hotStatuses.get(429) ?? 0) > 0, `'${strategy}': "${HOT}" went over its limit and got 429s`);
    for (const identity of COLD) {
      const s = load.statuses.get(identity) ?? new Map();
      expect(
        (s.get(200) ?? 0) > 0 && s.size === 1,
        `'${strategy}': ${identity} (under its limit) got only 200s (got ${JSON.stringify([...s])})`,
      );
    }
    for (const [identity, s] of load.statuses) {
      for (const status of s.keys())
        expect(status === 200 || status === 429, `'${strategy}': ${identity} got only 200 or 429 (got ${status})`);
    }
    expect(sum(reports.map((r) => r.degraded)) === 0, `'${strategy}': no degraded answers (Redis was up throughout)`);
    if (strategy === 'lease')
      expect(scriptCalls * 4 < load.sent, `'lease': Redis saw far fewer calls than requests (${scriptCalls} for ${load.sent})`);
    results.push({
      strategy,
      sent: load.sent,
      hot200: hotStatuses.get(200) ?? 0,
      hot429: hotStatuses.get(429) ?? 0,
      scriptCalls,
      remoteCalls,
      maxPerWindow,
      bound,
    });
  }

  console.log(`summary ("${HOT}" per whole window vs limit ${first[0].limit}; Redis = script calls from INFO commandstats):`);
  const summary = [['strategy', 'requests', 'Redis calls', 'remoteCalls', `"${HOT}" 200`, `"${HOT}" 429`, 'most in a window']];
  for (const r of results)
    summary.push([r.strategy, r.sent, r.scriptCalls, r.remoteCalls, r.hot200, r.hot429, `${r.maxPerWindow} / ${first[0].limit}`]);
  console.log(table(summary));
} finally {
  await proxy?.close();
  for (const child of live) process.kill(child.pid, 'SIGKILL');
  admin.disconnect();
  await redisServer.stop();
}

console.log('');
if (failures.length > 0) {
  for (const what of failures) console.log(`UNEXPECTED: not true that ${what}`);
  process.exitCode = 1;
} else {
  console.log('everything behaved as the README says');
}
