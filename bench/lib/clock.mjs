// Two clocks for a round. `wall` is elapsed time. `cpu` is the CPU time the process consumed (user + system,
// every thread, from process.cpuUsage(), microsecond precision): on a machine shared with other busy processes
// the scheduler can leave a benchmark waiting in the run queue for most of a round, which wall time counts and
// CPU time does not. CPU time includes what V8's helper threads do on the benchmark's behalf (parallel
// scavenges, concurrent marking, compilation), which is part of what a decision costs.

/** Whether the `cpu` clock can be read here (it can wherever Node runs; kept for suites that check). */
export const cpuClockAvailable = typeof process.cpuUsage === 'function';

/** Reads both clocks: `{ wall, cpu }` in nanoseconds (`wall` as BigInt, `cpu` as a number). */
export function now() {
  const usage = process.cpuUsage();
  return { wall: process.hrtime.bigint(), cpu: (usage.user + usage.system) * 1000 };
}

/** Nanoseconds between two readings on each clock. */
export function since(start) {
  const usage = process.cpuUsage();
  const cpu = (usage.user + usage.system) * 1000 - start.cpu;
  return { wall: Number(process.hrtime.bigint() - start.wall), cpu };
}
