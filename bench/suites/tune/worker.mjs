// One `tune` run in its own process, so its peak RSS is its own: prints the lines read, the time, the CPU time (the
// process's, worker threads included, and the main thread's alone) and the peak RSS.
import { readFileSync } from 'node:fs';
import { parseRuleFlag, tune } from '@sluice/cli';
import { reply } from '../../lib/child.mjs';

const [file, strict, threads, ...rules] = process.argv.slice(2);

/** The main thread's CPU time in ms, from /proc (Linux; undefined elsewhere). Ticks of 10 ms. */
function mainThreadCpuMs() {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

const cpu = process.cpuUsage();
const mainCpu = mainThreadCpuMs();
const started = performance.now();
const report = await tune({ inputs: [file], strict: strict === 'strict', threads: Number(threads), candidates: rules.map(parseRuleFlag) });
const elapsedMs = performance.now() - started;
const used = process.cpuUsage(cpu);
const mainCpuAfter = mainThreadCpuMs();
reply({
  lines: report.lines.read,
  scanned: report.lines.scanned,
  jsonParsed: report.lines.jsonParsed,
  identities: report.identities.total,
  elapsedMs,
  cpuMs: (used.user + used.system) / 1000,
  mainCpuMs: mainCpu === undefined || mainCpuAfter === undefined ? undefined : mainCpuAfter - mainCpu,
  peakRssBytes: process.resourceUsage().maxRSS * 1024,
});
