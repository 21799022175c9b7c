// Two clocks for a round. `wall` is elapsed time. `cpu` is the time the main thread actually ran on a CPU,
// from /proc/self/task/<pid>/schedstat (Linux, nanoseconds): on a machine shared with other busy processes the
// scheduler can leave a benchmark waiting in the run queue for most of a round, which wall time counts and CPU
// time does not. Work the main thread waits for (a scavenge, a microtask) is on the main thread and counted;
// work handed to background threads (concurrent marking) is not.
import { readFileSync } from 'node:fs';

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;

function readCpuNs() {
  try {
    return BigInt(readFileSync(SCHEDSTAT, 'utf8').split(' ', 1)[0]);
  } catch {
    return undefined;
  }
}

/** Whether the `cpu` clock can be read here. */
export const cpuClockAvailable = readCpuNs() !== undefined;

/** Reads both clocks: `{ wall, cpu }` in nanoseconds as BigInt (`cpu` undefined where unavailable). */
export function now() {
  return { wall: process.hrtime.bigint(), cpu: cpuClockAvailable ? readCpuNs() : undefined };
}

/** Nanoseconds between two readings on each clock. */
export function since(start) {
  const end = now();
  return { wall: Number(end.wall - start.wall), cpu: start.cpu === undefined ? undefined : Number(end.cpu - start.cpu) };
}
