// Upstash suite: sluice's Upstash store against @upstash/ratelimit, both through the same @upstash/redis client
// settings, over real HTTP to the local Upstash REST fixture in front of one real redis-server (the fixture and
// Redis run in a child process, like a remote database would). Same algorithm where both have it: fixed window,
// sliding window (sluice's sliding window counter is the same weighted-two-windows idea), token bucket; plus
// compound limits ("per second and per day"), which @upstash/ratelimit can only express as two limiters.
//
// Per decision it counts HTTP requests (the fixture's counter), top-level Redis commands (what the fixture
// forwards) and every Redis command executed, script internals included (INFO commandstats), then times
// decisions per second with several decisions in flight. Every contestant is warmed first, so the one-time
// EVALSHA -> NOSCRIPT -> EVAL of a fresh script cache is not counted.
import { execFileSync } from 'node:child_process';
import { createLimiter, fixedWindow, slidingWindowCounter, tokenBucket } from '@sluice/core';
import { upstashStore } from '@sluice/upstash';
import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from '@upstash/redis';
import { startFixtureProcess } from '../../test/harness/upstash-fixture-process.mjs';
import { compare } from '../lib/harness.mjs';
import { target } from '../lib/report.mjs';
import { formatInteger, formatRatio } from '../lib/table.mjs';

export const description =
  'through a local Upstash REST fixture: sluice Upstash store vs @upstash/ratelimit (requests, commands, decisions/s)';

const IDENTITIES = 1_000;
const LIMIT = 100_000; // per minute and identity: every decision of the run is allowed, so both do the same work

/** Each pair: the same limit in both libraries. `ratelimit` returns one limiter or several that must all pass. */
const PAIRS = [
  {
    key: 'fixed window',
    sluice: () => fixedWindow({ limit: LIMIT, window: '1m' }),
    ratelimit: () => [Ratelimit.fixedWindow(LIMIT, '60 s')],
  },
  {
    key: 'sliding window',
    sluice: () => slidingWindowCounter({ limit: LIMIT, window: '1m' }),
    ratelimit: () => [Ratelimit.slidingWindow(LIMIT, '60 s')],
  },
  {
    key: 'token bucket',
    sluice: () => tokenBucket({ capacity: LIMIT, refillRate: LIMIT, interval: '1m', refill: 'interval' }),
    ratelimit: () => [Ratelimit.tokenBucket(LIMIT, '60 s', LIMIT)],
  },
  {
    key: 'compound (minute + day)',
    sluice: () => [
      tokenBucket({ capacity: LIMIT, refillRate: LIMIT, interval: '1m', refill: 'interval' }),
      fixedWindow({ limit: LIMIT * 10, window: '1d' }),
    ],
    ratelimit: () => [Ratelimit.tokenBucket(LIMIT, '60 s', LIMIT), Ratelimit.fixedWindow(LIMIT * 10, '1 d')],
  },
];

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const ops = Number(options.ops ?? (quick ? 400 : 2_000));
  const rounds = Number(options.rounds ?? (quick ? 3 : 5));
  const warmupRounds = Number(options.warmup ?? 1);
  const inFlight = Number(options.inflight ?? 16);
  const countOps = Number(options.count ?? (quick ? 200 : 500));
  pipelining = options.pipelining !== 'off';

  log('starting redis-server and the Upstash REST fixture (child process)');
  const fixture = await startFixtureProcess({ loader: import.meta.resolve('tsx') });
  try {
    const contestants = [];
    for (const pair of PAIRS) {
      contestants.push(
        sluiceContestant(fixture, pair, 'store'),
        sluiceContestant(fixture, pair, 'client'),
        sluiceContestant(fixture, pair, 'store', 'own'),
        ratelimitContestant(fixture, pair),
      );
    }
    log(`warming up: every contestant decides once for each of the ${formatInteger(IDENTITIES)} identities (steady state: keys exist)`);
    for (const c of contestants) {
      await c.setup();
      await drive(c, IDENTITIES, inFlight);
    }

    log(`counting requests and commands: ${countOps} decisions per contestant, 1 and ${inFlight} in flight`);
    const counts = new Map();
    for (const c of contestants) {
      const single = await countPass(fixture, c, countOps, 1);
      const concurrent = await countPass(fixture, c, countOps, inFlight);
      counts.set(c.name, { single, concurrent });
    }

    log(`timing ${ops} decisions per round, ${inFlight} in flight, ${warmupRounds} warmup + ${rounds} rounds, interleaved`);
    const timed = contestants.map((c) => ({
      name: c.name,
      run: (n) => drive(c, n, inFlight),
      extra: () => ({ ...flatten(counts.get(c.name)), degraded: c.degraded }),
    }));
    const rows = await compare(timed, { ops, rounds, warmupRounds, clock: 'wall', log });

    // One ratio column: each row against @upstash/ratelimit on the same algorithm.
    for (const [i, row] of rows.entries()) {
      const base = rows.find((r) => r.name === `ratelimit ${contestants[i].pair.key}`);
      row.vsRatelimit = Math.round((row.nsPerOp / base.nsPerOp) * 100) / 100;
    }

    const targets = [];
    for (const pair of PAIRS) {
      const s = rows.find((r) => r.name === `sluice ${pair.key}`);
      const u = rows.find((r) => r.name === `ratelimit ${pair.key}`);
      // One request and one EVALSHA is the floor for a lone decision: a single rule can only tie there.
      const op = pair.key.startsWith('compound') ? '<' : '<=';
      const per = (a, b) => `${a.toFixed(2)} vs ${b.toFixed(2)}`;
      const perN = (a, b) => `${a.toFixed(3)} vs ${b.toFixed(3)}`;
      targets.push(
        target(
          `${pair.key}: sluice HTTP requests per decision ${op} @upstash/ratelimit's (1 in flight)`,
          s.requestsPerDecision / u.requestsPerDecision,
          op,
          1,
          () => per(s.requestsPerDecision, u.requestsPerDecision),
        ),
        target(
          `${pair.key}: sluice top-level Redis commands per decision ${op} @upstash/ratelimit's (1 in flight)`,
          s.topCommandsPerDecision / u.topCommandsPerDecision,
          op,
          1,
          () => per(s.topCommandsPerDecision, u.topCommandsPerDecision),
        ),
        target(
          `${pair.key}: sluice Redis commands executed per decision (script internals included) < @upstash/ratelimit's (1 in flight)`,
          s.redisCommandsPerDecision / u.redisCommandsPerDecision,
          '<',
          1,
          () => per(s.redisCommandsPerDecision, u.redisCommandsPerDecision),
        ),
        target(
          `${pair.key}: sluice HTTP requests per decision ${op} @upstash/ratelimit's (${inFlight} in flight)`,
          s.requestsPerDecisionConcurrent / u.requestsPerDecisionConcurrent,
          op,
          1,
          () => perN(s.requestsPerDecisionConcurrent, u.requestsPerDecisionConcurrent),
        ),
        target(
          `${pair.key}: sluice top-level Redis commands per decision < @upstash/ratelimit's (${inFlight} in flight)`,
          s.topCommandsPerDecisionConcurrent / u.topCommandsPerDecisionConcurrent,
          '<',
          1,
          () => perN(s.topCommandsPerDecisionConcurrent, u.topCommandsPerDecisionConcurrent),
        ),
        target(
          `${pair.key}: sluice Redis commands executed per decision < @upstash/ratelimit's (${inFlight} in flight)`,
          s.redisCommandsPerDecisionConcurrent / u.redisCommandsPerDecisionConcurrent,
          '<',
          1,
          () => perN(s.redisCommandsPerDecisionConcurrent, u.redisCommandsPerDecisionConcurrent),
        ),
        target(
          `${pair.key}: sluice decisions/s >= @upstash/ratelimit's (${inFlight} in flight)`,
          s.opsPerSec / u.opsPerSec,
          '>=',
          1,
          (v) => `${formatInteger(s.opsPerSec)} vs ${formatInteger(u.opsPerSec)} (${formatRatio(v)})`,
        ),
      );
    }

    return {
      title: `Upstash REST (local fixture over redis-server), ${formatInteger(IDENTITIES)} identities, all decisions allowed; timing: ${formatInteger(ops)} decisions per round, ${inFlight} in flight, median of ${rounds} rounds after ${warmupRounds} warmup; @upstash/redis auto-pipelining ${pipelining ? 'on (its default)' : 'off'} for both`,
      rows,
      ratios: [],
      columns: [
        { key: 'vsRatelimit', label: '÷ ratelimit', format: formatRatio },
        { key: 'requestsPerDecision', label: 'req/dec', format: (v) => v.toFixed(2) },
        { key: 'requestsPerDecisionConcurrent', label: `req/dec @${inFlight}`, format: (v) => v.toFixed(3) },
        { key: 'topCommandsPerDecision', label: 'top cmds/dec', format: (v) => v.toFixed(2) },
        { key: 'topCommandsPerDecisionConcurrent', label: `top @${inFlight}`, format: (v) => v.toFixed(3) },
        { key: 'redisCommandsPerDecision', label: 'redis cmds/dec', format: (v) => v.toFixed(2) },
        { key: 'redisCommandsPerDecisionConcurrent', label: `redis @${inFlight}`, format: (v) => v.toFixed(2) },
        { key: 'redisUsecPerDecision', label: 'redis µs/dec', format: (v) => v.toFixed(1) },
        { key: 'clientCpuUsecPerDecision', label: 'client cpu µs/dec', format: (v) => v.toFixed(0) },
        { key: 'commandMix', label: 'commands executed per decision', format: (v) => v },
      ],
      targets,
      notes: [
        '"÷ ratelimit" is time per decision divided by @upstash/ratelimit\'s on the same algorithm: below 1.00x is faster.',
        '"req/dec": HTTP requests per decision with one decision in flight; "@N": with N in flight, where the client\'s auto-pipelining (on by default, same client settings for both) carries several commands per request, and sluice\'s store batches the decisions issued together into one script call (its default, batch: true).',
        '"top cmds/dec": commands the fixture forwarded (EVALSHA); "redis cmds/dec": every command Redis executed (INFO commandstats), script internals included, in steady state (every identity seen before); "@N": the same with N in flight; "redis µs/dec": time Redis spent in the scripts per decision at 1 in flight (commandstats usec of EVALSHA, which includes the commands it runs); "client cpu": CPU time of this process (library + @upstash/redis + fetch) per decision at N in flight. Wall-clock columns move with the machine\'s load (see the load average below); these counts and CPU times much less.',
        'sluice by default reads the store clock (one TIME inside the script); "client clock" rows send the limiter\'s clock instead, as @upstash/ratelimit always does. "own client" rows use the store\'s own REST client ({ url, token }: one POST per script call, no auto-pipelining of its own) in place of @upstash/redis. Targets are for the default. @upstash/ratelimit runs with ephemeralCache: false and analytics off; its cache only answers identities it saw denied, and none is here.',
        'Compound: sluice decides both rules in one all-or-nothing script; @upstash/ratelimit needs two limiters called one after the other (and the first consumes even when the second denies).',
      ],
      data: { counts: Object.fromEntries(counts), identities: IDENTITIES, inFlight, pipelining },
    };
  } finally {
    await fixture.stop();
  }
}

let pipelining = true;

function client(fixture) {
  // The client a user gets by default, minus telemetry headers (and with --pipelining=off, minus auto-pipelining).
  // One client per contestant: auto-pipelining batches never mix two contestants' commands.
  return new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false, enableAutoPipelining: pipelining });
}

const identities = Array.from({ length: IDENTITIES }, (_, i) => `user-${i}`);

/** client 'upstash': @upstash/redis (the default rows); 'own': the store's own REST client, upstashStore({ url, token }). */
function sluiceContestant(fixture, pair, clock, restClient = 'upstash') {
  const c = {
    name:
      restClient === 'own'
        ? `sluice ${pair.key}, own client`
        : clock === 'store'
          ? `sluice ${pair.key}`
          : `sluice ${pair.key}, client clock`,
    pair,
    degraded: 0,
    decide: undefined,
    async setup() {
      const store = upstashStore(restClient === 'own' ? { url: fixture.url, token: fixture.token } : client(fixture), { clock });
      const limiter = createLimiter({
        store,
        rules: pair.sluice(),
        name: `bench-${slug(pair.key)}-${clock}-${restClient}`,
        timeout: 10_000,
      });
      c.decide = async (id) => {
        const decision = await limiter.limit(id);
        if (decision.degraded) c.degraded++;
        return decision.allowed;
      };
      await c.decide('warmup');
    },
  };
  return c;
}

function ratelimitContestant(fixture, pair) {
  const c = {
    name: `ratelimit ${pair.key}`,
    pair,
    degraded: 0,
    decide: undefined,
    async setup() {
      const redis = client(fixture);
      const limiters = pair
        .ratelimit()
        .map(
          (limiter, i) =>
            new Ratelimit({ redis, limiter, prefix: `bench-rl-${slug(pair.key)}-${i}`, ephemeralCache: false, timeout: 10_000 }),
        );
      c.decide = async (id) => {
        for (const limiter of limiters) {
          const result = await limiter.limit(id);
          if (result.reason === 'timeout') c.degraded++;
          if (!result.success) return false;
        }
        return true;
      };
      await c.decide('warmup');
    },
  };
  return c;
}

let cursor = 0;

/** Runs `ops` decisions with `inFlight` workers, identities round-robin. */
async function drive(contestant, ops, inFlight) {
  let started = 0;
  let allowed = 0;
  const worker = async () => {
    while (started < ops) {
      started++;
      if (await contestant.decide(identities[cursor++ % IDENTITIES])) allowed++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, ops) }, worker));
  return allowed;
}

async function countPass(fixture, contestant, ops, inFlight) {
  await fixture.reset();
  const before = commandStats(fixture.redisPort);
  const cpuBefore = process.cpuUsage();
  await drive(contestant, ops, inFlight);
  const cpu = process.cpuUsage(cpuBefore);
  const after = commandStats(fixture.redisPort);
  const stats = await fixture.stats();
  const executed = {};
  for (const [name, { calls }] of Object.entries(after)) {
    const delta = calls - (before[name]?.calls ?? 0);
    if (delta > 0 && name !== 'info') executed[name] = delta;
  }
  // EVALSHA's time includes the commands its script runs, so it alone is Redis's time per decision.
  const scriptUsec = (after.evalsha?.usec ?? 0) - (before.evalsha?.usec ?? 0) + (after.eval?.usec ?? 0) - (before.eval?.usec ?? 0);
  const total = Object.values(executed).reduce((a, b) => a + b, 0);
  return {
    requests: stats.requests / ops,
    topCommands: stats.redisCommands / ops,
    redisCommands: total / ops,
    redisUsec: scriptUsec / ops,
    clientCpuUsec: (cpu.user + cpu.system) / ops,
    mix: Object.entries(executed)
      .sort((a, b) => b[1] - a[1])
      .map(([name, calls]) => `${(calls / ops).toFixed(2).replace(/\.00$/, '')} ${name}`)
      .join(' + '),
  };
}

function flatten(counts) {
  return {
    requestsPerDecision: counts.single.requests,
    requestsPerDecisionConcurrent: counts.concurrent.requests,
    topCommandsPerDecision: counts.single.topCommands,
    topCommandsPerDecisionConcurrent: counts.concurrent.topCommands,
    redisCommandsPerDecision: counts.single.redisCommands,
    redisCommandsPerDecisionConcurrent: counts.concurrent.redisCommands,
    redisUsecPerDecision: counts.single.redisUsec,
    clientCpuUsecPerDecision: counts.concurrent.clientCpuUsec,
    commandMix: counts.single.mix,
  };
}

/** Calls and total µs per command from INFO commandstats, read with redis-cli straight from Redis (not through the fixture). */
function commandStats(port) {
  const text = execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'INFO', 'commandstats'], { encoding: 'utf8' });
  const stats = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    stats[match[1]] = { calls: Number(match[2]), usec: Number(match[3]) };
  return stats;
}

function slug(text) {
  return text.replace(/[^a-z0-9]+/gi, '-').replace(/-+$/, '');
}
