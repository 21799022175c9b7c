// The timing harness. Contestants run interleaved: every round times each contestant once, in a rotating
// order, so a burst of load from another process on the machine hits all of them rather than one. A contestant
// runs its own tight loop of `ops` operations (no per-operation callback from the harness, whose call would be
// a large part of a 50 ns operation). Garbage a contestant makes inside its round is its own cost; garbage
// left over from before is collected before the round starts when gc is exposed (run.mjs makes sure it is).
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
 * Returns rows `{ name, nsPerOp, opsPerSec, spreadPct, rounds, roundNsPerOp, ...extra }`; nsPerOp is the median.
 * @param {Contestant[]} contestants
 * @param {{ ops: number, rounds: number, warmupRounds: number, log?: (line: string) => void }} options
 */
export async function compare(contestants, { ops, rounds, warmupRounds, log = () => {} }) {
  const timings = contestants.map(() => []);
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
        const start = process.hrtime.bigint();
        await contestants[index].run(ops);
        const elapsed = Number(process.hrtime.bigint() - start);
        timings[index].push(elapsed / ops);
      }
      log(`round ${r + 1}/${rounds}`);
    }
  } finally {
    for (const c of contestants) await c.teardown?.();
  }
  return contestants.map((c, i) => {
    const nsPerOp = median(timings[i]);
    return {
      name: c.name,
      nsPerOp: round(nsPerOp, 1),
      opsPerSec: Math.round(1e9 / nsPerOp),
      spreadPct: round(spreadPct(timings[i]), 1),
      rounds: timings[i].length,
      roundNsPerOp: timings[i].map((t) => round(t, 1)),
      ...c.extra?.(),
    };
  });
}

/** Lets timers due from the previous round fire (peers expire keys with timers) and collects old garbage. */
async function settle() {
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc?.();
}

export function round(value, digits) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
