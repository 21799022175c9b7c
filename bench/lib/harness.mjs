// The timing harness. Contestants run interleaved: every round times each contestant once, in a rotating
// order, so a burst of load from another process on the machine hits all of them rather than one. A contestant
// runs its own tight loop of `ops` operations (no per-operation callback from the harness, whose call would be
// a large part of a 50 ns operation). Garbage a contestant makes inside its round is its own cost; garbage
// left over from before is collected before the round starts when gc is exposed (run.mjs makes sure it is).
import { cpuClockAvailable, now, since } from './clock.mjs';
import { median, spreadPct } from './stats.mjs';

/**
 * @typedef {object} Contestant
 * @property {string} name           Row name in the table and in results.
 * @property {(ops: number) => (void | Promise<void>)} run  Performs `ops` operations.
 * @property {() => (void | Promise<void>)} [setup]     Builds state before warmup; not timed.
 * @property {() => (void | Promise<void>)} [teardown]  Stops timers, closes clients; not timed.
 * @property {() => object} [extra]  Extra fields for the row (e.g. allowed share), read after the last round.
 */

/**
 * Times each contestant over `rounds` rounds of `ops` operations after `warmupRounds` untimed rounds.
 * `clock: 'cpu'` ranks by the process's CPU time (see clock.mjs; falls back to wall time where unavailable),
 * `clock: 'wall'` by elapsed time; both are recorded. For I/O-bound suites use 'wall': waiting is the cost.
 * Returns rows `{ name, nsPerOp, opsPerSec, spreadPct, clock, wallNsPerOp, cpuNsPerOp, roundNsPerOp, ...extra }`
 * where nsPerOp is the median over rounds on the chosen clock.
 * @param {Contestant[]} contestants
 * @param {{ ops: number, rounds: number, warmupRounds: number, clock?: 'wall' | 'cpu', log?: (line: string) => void }} options
 */
export async function compare(contestants, { ops, rounds, warmupRounds, clock = 'wall', log = () => {} }) {
  const used = clock === 'cpu' && cpuClockAvailable ? 'cpu' : 'wall';
  const wall = contestants.map(() => []);
  const cpu = contestants.map(() => []);
  for (const c of contestants) await c.setup?.();
  try {
    for (let w = 0; w < warmupRounds; w++) {
      for (const c of contestants) {
        await settle();
        await c.run(ops);
      }
      log(`warmup ${w + 1}/${warmupRounds}`);
    }
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < contestants.length; k++) {
        const index = (k + r) % contestants.length;
        await settle();
        const start = now();
        await contestants[index].run(ops);
        const elapsed = since(start);
        wall[index].push(elapsed.wall / ops);
        if (elapsed.cpu !== undefined) cpu[index].push(elapsed.cpu / ops);
      }
      log(`round ${r + 1}/${rounds}`);
    }
  } finally {
    for (const c of contestants) await c.teardown?.();
  }
  return contestants.map((c, i) => {
    const timings = used === 'cpu' ? cpu[i] : wall[i];
    const nsPerOp = median(timings);
    return {
      name: c.name,
      nsPerOp: round(nsPerOp, 1),
      opsPerSec: Math.round(1e9 / nsPerOp),
      spreadPct: round(spreadPct(timings), 1),
      clock: used,
      wallNsPerOp: round(median(wall[i]), 1),
      cpuNsPerOp: cpu[i].length > 0 ? round(median(cpu[i]), 1) : undefined,
      rounds: timings.length,
      roundNsPerOp: timings.map((t) => round(t, 1)),
      ...c.extra?.(),
    };
  });
}

/**
 * Between rounds: lets timers due from the previous round fire (peers expire keys with timers), collects old
 * garbage, then idles briefly so V8's background sweeping of that collection is not billed to the next round.
 */
async function settle() {
  await new Promise((resolve) => setImmediate(resolve));
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  }
}

const SETTLE_MS = 20;

export function round(value, digits) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
