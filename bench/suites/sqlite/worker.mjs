// One of the four processes of the sqlite suite's multi-process run: opens the shared file, waits for the common
// start instant, makes `ops` decisions over the shared workload from its own offset, and prints one JSON line.
// argv: contestant ('sluice' | 'rlf'), file, ops, startAtMs (epoch), offset into the identity order.
import { RateLimiterRes } from 'rate-limiter-flexible';
import { reply } from '../../lib/child.mjs';
import { MASK, ids, order } from '../memory/workload.mjs';
import { openDatabase, rlfLimiter, sluiceLimiter } from './contestants.mjs';

const [contestant, file, opsText, startText, offsetText] = process.argv.slice(2);
const ops = Number(opsText);
const startAt = Number(startText);
const db = openDatabase(file);

async function runSluice() {
  const limiter = sluiceLimiter(db);
  await waitForStart();
  let allowed = 0;
  let degraded = 0;
  let c = Number(offsetText);
  for (let i = 0; i < ops; i++) {
    const decision = limiter.limitSync(ids[order[c++ & MASK]]);
    if (decision.degraded) degraded++;
    else if (decision.allowed) allowed++;
  }
  return { allowed, degraded };
}

async function runRlf() {
  const limiter = await rlfLimiter(db);
  await waitForStart();
  let allowed = 0;
  let c = Number(offsetText);
  for (let i = 0; i < ops; i++) {
    try {
      await limiter.consume(ids[order[c++ & MASK]]);
      allowed++;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error; // SQLITE_BUSY and the like: a real failure
    }
  }
  return { allowed, degraded: 0 };
}

let started;
let cpuStart;
async function waitForStart() {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
  started = { wall: process.hrtime.bigint(), epoch: Date.now() };
  cpuStart = process.cpuUsage();
}

const counts = contestant === 'sluice' ? await runSluice() : await runRlf();
const elapsedNs = Number(process.hrtime.bigint() - started.wall);
const cpu = process.cpuUsage(cpuStart);
const endEpochMs = Date.now();
db.close();
reply({
  ops,
  ...counts,
  elapsedNs,
  cpuNs: (cpu.user + cpu.system) * 1000,
  startEpochMs: started.epoch,
  endEpochMs,
  startedLateMs: started.epoch - startAt,
});
