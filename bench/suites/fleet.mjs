// A busy fleet on one redis-server, judged the way callers and third parties see it (by the wall clock around each
// call): rate limits (the plain store, each tier strategy, a Lua INCR limiter and a reference lease tier, with a
// kill and an empty restart of the server), concurrency (fleet/concurrency.mjs) and outbound waiting through a
// bare-429 drop (fleet/outbound.mjs). `--part=rate|concurrency|outbound` runs one part; `--quick` shorter runs.
import { spawn } from 'node:child_process';
import { target } from '../lib/report.mjs';
import { median } from '../lib/stats.mjs';
import { formatInteger, formatRatio, formatTable } from '../lib/table.mjs';
import { startRedisServer } from './outbound/redis-server.mjs';
import { FLEET_DEFAULTS, runRateFleet } from '../../test/harness/fleet/rate-fleet.mjs';

export const description =
  "a busy fleet (4 processes × 64 loops, 10,000 Zipf users + an abuser): plain store, tier strategies, Lua INCR and a reference lease tier, by the callers' wall clock; concurrency and outbound parts";
export const builds = ['@sluice/core', '@sluice/http', '@sluice/redis', '@sluice/tiered'];

const CONTESTANTS = ['reference-lease', 'lease', 'deny-cache', 'async', 'plain', 'lua-incr'];
const ASYNC = { flushEvery: 10, maxUnsynced: 20 };

/** @param {{ options: Record<string, string | true>, log: (line: string) => void }} context */
export async function run({ options, log }) {
  const part = options.part ?? 'all';
  const reports = [];
  if (part === 'all' || part === 'rate') reports.push(await rate(options, log));
  for (const name of ['concurrency', 'outbound']) {
    if (part !== 'all' && part !== name) continue;
    const module = await import(`./fleet/${name}.mjs`);
    log(`fleet: ${name} part`);
    reports.push(await module.run({ options, log }));
  }
  if (reports.length === 0) throw new Error(`bench fleet: --part must be rate, concurrency or outbound, got ${part}`);
  const [first, ...rest] = reports;
  return {
    ...first,
    sections: [
      ...(first.sections ?? []),
      ...rest.flatMap((r) => [
        { heading: r.title, lines: r.rows?.length ? formatTable(r.rows, { ratios: r.ratios, columns: r.columns }).split('\n') : [] },
        ...(r.sections ?? []),
        { heading: '', lines: r.notes ?? [] },
      ]),
    ],
    targets: reports.flatMap((r) => r.targets ?? []),
    notes: first.notes,
    data: Object.fromEntries(reports.map((r, i) => [i === 0 ? part : `part${i}`, r.data])),
  };
}

async function rate(options, log) {
  const quick = options.quick === true;
  const durationMs = Number(options.duration ?? (quick ? 3000 : 6000));
  const rounds = Number(options.rounds ?? (quick ? 1 : 3));
  const server = await startRedisServer();
  const port = server.port;
  let pid = server.pid;
  let replacement;
  const runs = new Map(CONTESTANTS.map((c) => [c, []]));
  const killed = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const contestant of CONTESTANTS) {
        log(`fleet rate: ${contestant}, round ${round + 1} of ${rounds}`);
        runs
          .get(contestant)
          .push(await runRateFleet({ port, contestant, durationMs, ...(contestant === 'async' ? { tier: { async: ASYNC } } : {}) }));
      }
    }
    for (const contestant of ['deny-cache', 'lease']) {
      log(`fleet rate: ${contestant}, redis-server SIGKILLed at 40% and restarted empty at 60%`);
      let restartedAt = Number.NaN;
      const during = async (startAt) => {
        await sleepUntil(startAt + 0.4 * durationMs);
        process.kill(pid, 'SIGKILL');
        await sleepUntil(startAt + 0.6 * durationMs);
        replacement?.kill('SIGKILL');
        replacement = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
          stdio: 'ignore',
        });
        pid = replacement.pid;
        while (!(await answers(port))) await sleepUntil(Date.now() + 20);
        restartedAt = Date.now();
      };
      const result = await runRateFleet({ port, contestant, durationMs, during });
      killed.push({ ...result, backAfterMs: Math.max(0, result.lastDegradedAt - restartedAt) });
    }
  } finally {
    if (replacement !== undefined) replacement.kill('SIGTERM');
    else await server.stop();
  }

  const pick = (contestant) => {
    const list = runs.get(contestant);
    const rate = median(list.map((r) => r.decisionsPerSec));
    return { ...(list.find((r) => r.decisionsPerSec === rate) ?? list[0]), decisionsPerSec: rate };
  };
  const names = {
    'reference-lease': 'reference lease tier (in the bench)',
    lease: 'tier lease',
    'deny-cache': 'tier deny-cache',
    async: 'tier async',
    plain: 'plain redisStore',
    'lua-incr': 'Lua INCR per decision (in the bench)',
  };
  const reference = pick('reference-lease');
  const plain = pick('plain');
  const rows = CONTESTANTS.map((c) => pick(c)).map((r) => ({
    name: names[r.contestant],
    nsPerOp: 1e9 / r.decisionsPerSec,
    opsPerSec: r.decisionsPerSec,
    worst: r.verdict.worstRatio,
    over: r.verdict.over,
    vsReference: r.decisionsPerSec / reference.decisionsPerSec,
    commands: r.commandsPerDecision,
    degraded: r.degraded,
    loop: r.loopDelayMaxMs,
  }));
  const row = (c) => rows[CONTESTANTS.indexOf(c)];
  const [deny, lease] = killed;
  const targets = [
    target('lease: admissions over the limit', row('lease').over, '<=', 0, String),
    target('deny-cache: admissions over the limit', row('deny-cache').over, '<=', 0, String),
    target('lease, server killed and restarted: admissions over the limit', lease.verdict.over, '<=', 0, String),
    target('deny-cache, server killed and restarted: admissions over the limit', deny.verdict.over, '<=', 0, String),
    target('lease exact again after the restart (ms; 2 windows)', lease.backAfterMs, '<=', 2 * FLEET_DEFAULTS.windowMs, formatInteger),
    target('deny-cache exact again after the restart (ms; 2 windows)', deny.backAfterMs, '<=', 2 * FLEET_DEFAULTS.windowMs, formatInteger),
    target('lease decisions/s ÷ the reference lease tier', row('lease').vsReference, '>=', 0.7, formatRatio),
    target('lease Redis commands per decision', row('lease').commands, '<=', 0.3, (v) => v.toFixed(2)),
    target('deny-cache decisions/s ÷ the plain store', row('deny-cache').opsPerSec / plain.decisionsPerSec, '>=', 1.5, formatRatio),
    target(
      `async worst window within its bound (limit + 4 × ${ASYNC.maxUnsynced})`,
      pick('async').verdict.worstWindow,
      '<=',
      FLEET_DEFAULTS.limit + 4 * ASYNC.maxUnsynced,
      String,
    ),
    target('plain store decisions/s ÷ Lua INCR', plain.decisionsPerSec / pick('lua-incr').decisionsPerSec, '>=', 1, formatRatio),
  ];
  const { processes, inFlight, limit, windowMs, identities, abuserShare } = FLEET_DEFAULTS;
  return {
    title: `Rate limits in a busy fleet: ${processes} processes × ${inFlight} loops for ${durationMs / 1000} s on one redis-server, fixedWindow ${limit} per ${windowMs} ms, ${abuserShare * 100}% of calls from one abuser and the rest Zipf(1) over ${formatInteger(identities)} users; median of ${rounds} round(s)`,
    rows,
    columns: [
      { key: 'vsReference', label: '× reference', format: formatRatio },
      { key: 'worst', label: 'worst window ÷ limit', format: (v) => v.toFixed(2) },
      { key: 'over', label: 'over the limit', format: String },
      { key: 'commands', label: 'Redis cmds/decision', format: (v) => v.toFixed(2) },
      { key: 'degraded', label: 'degraded', format: String },
      { key: 'loop', label: 'event-loop delay max', format: (v) => `${Math.round(v)} ms` },
    ],
    sections: [
      {
        heading: 'With redis-server SIGKILLed at 40% of the run and restarted empty at 60%',
        lines: killed.map(
          (r) =>
            `${names[r.contestant]}: worst window ${r.verdict.worstRatio.toFixed(2)}× the limit, ${r.verdict.over} over, ${r.degraded} degraded answers (refusals and local-share answers), last one ${formatInteger(r.backAfterMs)} ms after the restart, ${r.rejected} rejected calls, ${r.unhandled.length} unhandled rejections`,
        ),
      },
    ],
    targets,
    notes: [
      "Admissions are judged by the callers' wall clock: each may count in any window its [before the call, after the answer] interval overlaps, in the assignment with the fewest over the limit (test/harness/fleet/judge.mjs). Redis commands are INFO commandstats deltas (commands run inside scripts included).",
    ],
    data: { rows, killed: killed.map(({ admissions: _admissions, ...rest }) => rest) },
  };
}

function sleepUntil(at) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
}

function answers(port) {
  return import('../../test/harness/fleet/rate-fleet.mjs').then(({ redisCommand }) =>
    redisCommand(port, 'PING', 300).then(
      (r) => r.startsWith('+PONG'),
      () => false,
    ),
  );
}
