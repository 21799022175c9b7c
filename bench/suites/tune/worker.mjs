// One `tune` run in its own process, so its peak RSS is its own: prints the lines read, the time and the peak RSS.
import { parseRuleFlag, tune } from '@sluice/cli';
import { reply } from '../../lib/child.mjs';

const [file, strict, ...rules] = process.argv.slice(2);
const started = performance.now();
const report = await tune({ inputs: [file], strict: strict === 'strict', candidates: rules.map(parseRuleFlag) });
const elapsedMs = performance.now() - started;
reply({
  lines: report.lines.read,
  scanned: report.lines.scanned,
  jsonParsed: report.lines.jsonParsed,
  identities: report.identities.total,
  elapsedMs,
  peakRssBytes: process.resourceUsage().maxRSS * 1024,
});
