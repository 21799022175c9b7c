// Prints a suite's report: title, table with ratios, extra sections, then each target as met or NOT met.
import { formatTable } from './table.mjs';

/**
 * @typedef {object} Target
 * @property {string} name      What is promised, e.g. "limit() >= 3x faster than rate-limiter-flexible consume".
 * @property {string} measured  What was measured, formatted, e.g. "3.4x".
 * @property {boolean} met
 */

/**
 * Builds a target from a measured value and a bound.
 * @param {string} name
 * @param {number} value
 * @param {'<' | '<=' | '>' | '>='} op
 * @param {number} bound
 * @param {(v: number) => string} [format]
 * @returns {Target & { value: number, bound: number, op: string }}
 */
export function target(name, value, op, bound, format = (v) => String(v)) {
  const met = op === '<' ? value < bound : op === '<=' ? value <= bound : op === '>' ? value > bound : value >= bound;
  return { name, value, op, bound, measured: format(value), met };
}

export function formatReport(report) {
  const out = [];
  if (report.title) out.push(report.title, '');
  if (report.rows?.length) out.push(formatTable(report.rows, { ratios: report.ratios, columns: report.columns }), '');
  for (const section of report.sections ?? []) out.push(section.heading, ...section.lines.map((l) => `  ${l}`), '');
  if (report.targets?.length) {
    out.push('Targets');
    for (const t of report.targets) out.push(`  ${t.met ? 'met    ' : 'NOT met'}  ${t.name}: measured ${t.measured}`);
    out.push('');
  }
  for (const note of report.notes ?? []) out.push(note);
  return out.join('\n').trimEnd();
}
