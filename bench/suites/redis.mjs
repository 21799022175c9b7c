// Redis suite: one Node process, one local redis-server started here, one ioredis connection shared by every
// contestant (same server, same client options). Side by side in one run: sluice (Redis store) token bucket and
// GCRA (its defaults: a Redis Function, decisions issued together batched into one call), token bucket with
// batch: false and with functions: false (EVALSHA), rate-limiter-flexible's RateLimiterRedis consume, and the
// floor, a bare INCR on the same connection.
// Throughput with 64 decisions in flight, latency with one in flight, and commands per decision, counted both
// as the client sent them and as Redis executed them (INFO commandstats, script internals included).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLimiter, gcra, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { compare } from '../lib/harness.mjs';
import { target } from '../lib/report.mjs';
import { addRatios, formatInteger, formatRatio } from '../lib/table.mjs';

export const description =
  'one local redis-server: sluice token bucket & GCRA vs rate-limiter-flexible RateLimiterRedis vs bare INCR (decisions/s, latency, commands)';

const IDENTITIES = 1_000;
const LIMIT = 1_000_000_000; // per identity: every decision of the run is allowed, so all contestants do the same work
const SLUICE_TB = 'sluice token bucket';
const SLUICE_TB_UNBATCHED = 'sluice token bucket, batch: false';
const SLUICE_TB_EVALSHA = 'sluice token bucket, functions: false';
const SLUICE_GCRA = 'sluice GCRA';
const RLF = 'rate-limiter-flexible consume';
const FLOOR = 'floor: ioredis INCR';

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const ops = Number(options.ops ?? (quick ? 5_000 : 20_000));
  const rounds = Number(options.rounds ?? (quick ? 3 : 7));
  const warmupRounds = Number(options.warmup ?? 1);
  const inFlight = Number(options.inflight ?? 64);
  const latencyOps = Number(options.latency ?? (quick ? 1_000 : 4_000));
  const pipelining = options.pipelining !== 'off';

  const server = await startRedisServer();
  log(`redis-server ${server.port} (pid ${server.pid}); ioredis enableAutoPipelining: ${pipelining}`);
  const client = new Redis({ host: '127.0.0.1', port: server.port, enableAutoPipelining: pipelining });
  const sent = countSentCommands(client);
  try {
    const contestants = makeContestants(client);
    for (const c of contestants) await c.decide('warmup'); // loads scripts: the one-time NOSCRIPT path is not counted

    log(`counting commands: ${latencyOps} decisions per contestant, 1 and ${inFlight} in flight`);
    const counts = new Map();
    for (const c of contestants) {
      const single = await countCommands(client, sent, c, latencyOps, 1);
      const concurrent = await countCommands(client, sent, c, latencyOps, inFlight);
      counts.set(c.name, {
        ...single,
        sentPerDecisionConcurrent: concurrent.sentPerDecision,
        executedPerDecisionConcurrent: concurrent.executedPerDecision,
        executedMixConcurrent: concurrent.executedMix,
      });
    }

    log(`latency: ${latencyOps} decisions per contestant, 1 in flight, interleaved in 4 slices`);
    const latency = await measureLatency(contestants, latencyOps);

    log(`throughput: ${ops} decisions per round, ${inFlight} in flight, ${warmupRounds} warmup + ${rounds} rounds, interleaved`);
    const rows = await compare(
      contestants.map((c) => ({
        name: c.name,
        run: (n) => drive(c, n, inFlight),
        extra: () => ({ ...counts.get(c.name), ...latency.get(c.name), failures: c.failures }),
      })),
      { ops, rounds, warmupRounds, clock: 'wall', log },
    );
    const ratios = [
      { key: 'vsRlf', label: '÷ RLF', base: RLF },
      { key: 'vsFloor', label: '÷ INCR', base: FLOOR },
    ];
    addRatios(rows, ratios);

    const row = (name) => rows.find((r) => r.name === name);
    const targets = [];
    for (const name of [SLUICE_TB, SLUICE_GCRA]) {
      const s = row(name);
      targets.push(
        target(
          `${name}: decisions/s >= 1.4x rate-limiter-flexible's (${inFlight} in flight)`,
          s.opsPerSec / row(RLF).opsPerSec,
          '>=',
          1.4,
          (v) => `${formatInteger(s.opsPerSec)} vs ${formatInteger(row(RLF).opsPerSec)} (${formatRatio(v)})`,
        ),
        target(
          `${name}: decisions/s >= 0.8x the INCR floor (${inFlight} in flight)`,
          s.opsPerSec / row(FLOOR).opsPerSec,
          '>=',
          0.8,
          (v) => `${formatInteger(s.opsPerSec)} vs ${formatInteger(row(FLOOR).opsPerSec)} (${formatRatio(v)})`,
        ),
        target(
          `${name}: one round trip per decision: Redis commands sent per decision <= 1 (1 and ${inFlight} in flight)`,
          Math.max(s.sentPerDecision, s.sentPerDecisionConcurrent),
          '<=',
          1,
          () => `${s.sentPerDecision.toFixed(3)} (${s.sentMix}) and ${s.sentPerDecisionConcurrent.toFixed(3)}`,
        ),
        target(
          `${name}: p50 latency within 1.2x of INCR's (1 in flight)`,
          s.p50Us / row(FLOOR).p50Us,
          '<=',
          1.2,
          (v) => `${s.p50Us.toFixed(1)} µs vs ${row(FLOOR).p50Us.toFixed(1)} µs (${formatRatio(v)})`,
        ),
      );
    }
    const failures = rows.reduce((n, r) => n + r.failures, 0);
    return {
      title: `Redis (local redis-server ${server.version}), ${formatInteger(IDENTITIES)} identities, all decisions allowed; throughput: ${formatInteger(ops)} decisions per round, ${inFlight} in flight, median of ${rounds} rounds after ${warmupRounds} warmup; one ioredis connection, enableAutoPipelining ${pipelining ? 'on' : 'off'}`,
      rows,
      ratios,
      columns: [
        { key: 'p50Us', label: 'p50 µs @1', format: (v) => v.toFixed(1) },
        { key: 'p99Us', label: 'p99 µs @1', format: (v) => v.toFixed(1) },
        { key: 'sentPerDecision', label: 'sent/dec @1', format: (v) => v.toFixed(2) },
        { key: 'sentPerDecisionConcurrent', label: `sent/dec @${inFlight}`, format: (v) => v.toFixed(3) },
        { key: 'executedPerDecisionConcurrent', label: `executed/dec @${inFlight}`, format: (v) => v.toFixed(2) },
        { key: 'executedMix', label: 'executed by Redis per decision @1', format: (v) => v },
      ],
      targets,
      notes: [
        '"÷ RLF" and "÷ INCR" are time per decision divided by the other row\'s: below 1.00x is faster.',
        '"sent/dec": commands the client sent per decision; "executed": INFO commandstats, calls made inside scripts included; "@1" one decision in flight, "@N" N in flight.',
        'Every decision is answered after one round trip. sluice runs its Lua as a Redis Function (FCALL; the "functions: false" row uses EVALSHA) and batches the decisions issued in the same tick into one call (batch: true, the default: one TIME, one MGET and one SET per key for the lot), so under concurrency it sends well under one command per decision; the "batch: false" row sends one call per decision.',
        'sluice reads Redis TIME inside its script (store clock, the default); rate-limiter-flexible and INCR use no server clock.',
        `Failed decisions (errors or degraded) across the run: ${failures}.`,
      ],
      data: { identities: IDENTITIES, inFlight, pipelining },
    };
  } finally {
    client.disconnect();
    await server.stop();
  }
}

function makeContestants(client) {
  const sluice = (name, rules, options) => {
    const limiter = createLimiter({ store: redisStore(client, options), rules, name: name.replace(/\W+/g, '-'), timeout: 10_000 });
    const c = {
      name,
      failures: 0,
      decide: async (id) => {
        const decision = await limiter.limit(id);
        if (decision.degraded) c.failures++;
        return decision.allowed;
      },
    };
    return c;
  };
  const rlf = new RateLimiterRedis({ storeClient: client, points: LIMIT, duration: 60, keyPrefix: 'bench-rlf' });
  const rlfContestant = {
    name: RLF,
    failures: 0,
    decide: async (id) => {
      try {
        await rlf.consume(id);
        return true;
      } catch (error) {
        if (error instanceof Error) rlfContestant.failures++;
        return false;
      }
    },
  };
  const floor = {
    name: FLOOR,
    failures: 0,
    decide: async (id) => (await client.incr(`bench-incr:${id}`)) <= LIMIT,
  };
  return [
    sluice(SLUICE_TB, tokenBucket({ capacity: LIMIT, refillRate: LIMIT, interval: '1m' })),
    sluice(SLUICE_GCRA, gcra({ limit: LIMIT, period: '1m' })),
    sluice(SLUICE_TB_UNBATCHED, tokenBucket({ capacity: LIMIT, refillRate: LIMIT, interval: '1m' }), { batch: false }),
    sluice(SLUICE_TB_EVALSHA, tokenBucket({ capacity: LIMIT, refillRate: LIMIT, interval: '1m' }), { functions: false }),
    rlfContestant,
    floor,
  ];
}

const identities = Array.from({ length: IDENTITIES }, (_, i) => `user-${i}`);
let cursor = 0;

/** `ops` decisions with `inFlight` workers, identities round-robin. */
async function drive(contestant, ops, inFlight) {
  let started = 0;
  const worker = async () => {
    while (started < ops) {
      started++;
      await contestant.decide(identities[cursor++ % IDENTITIES]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, ops) }, worker));
}

async function measureLatency(contestants, ops) {
  const samples = new Map(contestants.map((c) => [c.name, []]));
  const slices = 4;
  for (let s = 0; s < slices; s++) {
    for (const c of contestants) {
      const list = samples.get(c.name);
      for (let i = 0; i < ops / slices; i++) {
        const start = process.hrtime.bigint();
        await c.decide(identities[cursor++ % IDENTITIES]);
        list.push(Number(process.hrtime.bigint() - start) / 1000);
      }
    }
  }
  return new Map(
    [...samples].map(([name, list]) => {
      list.sort((a, b) => a - b);
      const at = (p) => list[Math.min(list.length - 1, Math.floor(p * list.length))];
      return [name, { p50Us: at(0.5), p99Us: at(0.99) }];
    }),
  );
}

/** Wraps ioredis's single entry point for commands, so every command the client sends is counted by name. */
function countSentCommands(client) {
  const counts = new Map();
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    counts.set(command.name, (counts.get(command.name) ?? 0) + 1);
    return send(command, stream);
  };
  return counts;
}

async function countCommands(client, sent, contestant, ops, inFlight) {
  const before = await commandStats(client);
  sent.clear();
  await drive(contestant, ops, inFlight);
  const sentNow = new Map(sent);
  const after = await commandStats(client);
  const executed = {};
  for (const [name, calls] of Object.entries(after)) {
    const delta = calls - (before[name] ?? 0);
    if (delta > 0 && name !== 'info') executed[name] = delta;
  }
  const mix = (entries) =>
    entries
      .sort((a, b) => b[1] - a[1])
      .map(([name, calls]) => `${(calls / ops).toFixed(2).replace(/\.00$/, '')} ${name}`)
      .join(' + ');
  const totalSent = [...sentNow.values()].reduce((a, b) => a + b, 0);
  return {
    sentPerDecision: totalSent / ops,
    sentMix: mix([...sentNow]),
    executedPerDecision: Object.values(executed).reduce((a, b) => a + b, 0) / ops,
    executedMix: mix(Object.entries(executed)),
  };
}

async function commandStats(client) {
  const text = await client.info('commandstats');
  const calls = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]] = Number(match[2]);
  return calls;
}

// The bench's own redis-server: free loopback port, no persistence, stopped by pid.
async function startRedisServer() {
  const port = await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const spawned = new Promise((_, reject) =>
    child.once('error', (e) => reject(new Error(`redis-server could not start (${e.message}); install it: apt-get install redis-server`))),
  );
  const deadline = Date.now() + 10_000;
  let version = '?';
  while (true) {
    const reply = await Promise.race([ping(port), spawned]).catch((e) => (e.message.includes('install it') ? Promise.reject(e) : ''));
    if (reply.startsWith('+PONG')) break;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within 10 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const info = await rawCommand(port, 'INFO server');
  version = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? version;
  return {
    port,
    pid: child.pid,
    version,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const ping = (port) => rawCommand(port, 'PING');

function rawCommand(port, command) {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let data = '';
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.setTimeout(1000, () => socket.destroy(new Error('timeout')));
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      data += chunk;
      const header = data.indexOf('\r\n');
      const complete = data.startsWith('$') ? header > 0 && data.length >= header + 2 + Number(data.slice(1, header)) + 2 : header > 0;
      if (complete) {
        socket.end();
        resolve(data);
      }
    });
  });
}
