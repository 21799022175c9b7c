/** The HTML report: one self-contained page (inline CSS and SVG, no script) with the numbers and two charts. */
import { formatDuration } from './candidates.js';
import { bytes, count, isoTime, percent } from '../format.js';
import { SKIP_REASONS, type SkipReason } from './line-result.js';
import type { TuneReport } from './report.js';
import { color, escapeHtml, peakDistributionChart, refusedOverTimeChart } from './svg.js';

/** Time points drawn at most; adjacent buckets are summed down to this. */
const MAX_POINTS = 400;

export function htmlReport(r: TuneReport): string {
  const period = formatDuration(r.periodMs);
  const marks = r.candidates.map((c, i) => ({ label: `${c.label}`, value: scaledLimit(c.limit, c.windowMs, r.periodMs), color: color(i) }));
  marks.push({
    label: `exact ${r.exactFixedWindow.label}`,
    value: r.exactFixedWindow.limit,
    color: '#000',
    dashed: true,
  } as (typeof marks)[number]);
  // Points of whole buckets (so of whole windows), aligned to the epoch; a stretch without requests is a point at 0.
  const buckets = r.timeline.buckets;
  const span = buckets.length === 0 ? 0 : (buckets[buckets.length - 1]!.start - buckets[0]!.start) / r.timeline.bucketMs + 1;
  const group = Math.max(1, Math.ceil(span / MAX_POINTS));
  const pointMs = r.timeline.bucketMs * group;
  const first = buckets.length === 0 ? 0 : Math.floor(buckets[0]!.start / pointMs);
  const points = buckets.length === 0 ? 0 : Math.floor(buckets[buckets.length - 1]!.start / pointMs) - first + 1;
  const starts = Array.from({ length: points }, (_, i) => (first + i) * pointMs);
  const requests = new Array<number>(points).fill(0);
  const refused: number[][] = r.candidates.map(() => new Array<number>(points).fill(0));
  for (const b of buckets) {
    const i = Math.floor(b.start / pointMs) - first;
    requests[i]! += b.requests;
    refused.forEach((values, k) => (values[i]! += b.refused[k]!));
  }
  const series = r.candidates.map((c, k) => ({ label: c.label, color: color(k), values: refused[k]! }));
  const skipped = (Object.keys(r.lines.skippedByReason) as SkipReason[]).filter((k) => r.lines.skippedByReason[k] > 0);
  const recommended = r.recommendations.filter((x) => x.label !== null).map((x) => x.label!);

  const rows = r.candidates
    .map(
      (c, i) =>
        `<tr class="${c.withinTarget ? 'within' : ''}"><td><span class="swatch" style="background:${color(i)}"></span>${escapeHtml(c.label)}</td>` +
        `<td>${count(c.requestsRefused)}</td><td>${percent(c.requestsRefusedShare)}</td><td>${count(c.usersAffected)}</td><td>${percent(c.usersAffectedShare)}</td>` +
        `<td>${count(c.userPeriodsAffected)}</td><td>${percent(c.userPeriodsAffectedShare)}</td><td>${c.withinTarget ? '✓' : ''}</td></tr>`,
    )
    .join('\n');

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sluice tune report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, Segoe UI, sans-serif; margin: 24px auto; max-width: 960px; color: #1d2329; background: #fff; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; } td, th { padding: 4px 10px; border-bottom: 1px solid #e3e7eb; text-align: right; }
td:first-child, th:first-child { text-align: left; } tr.within td { background: #eef8ee; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px; }
.recommendation { font-size: 16px; padding: 10px 14px; background: #f3f6fa; border-left: 4px solid #1f77b4; }
.muted { color: #5c6670; } svg text { font-size: 11px; fill: #333; } svg .limit-label { font-weight: 600; }
</style></head><body>
<h1>sluice tune</h1>
<p class="muted">${escapeHtml(r.inputs.join(', '))} · ${count(r.lines.read)} lines (${bytes(r.bytes)}) · ${isoTime(r.time.first)} to ${isoTime(r.time.last)} · ${count(r.identities.total)} identities (${count(r.identities.users)} users, ${count(r.identities.ips)} by IP)</p>
<p class="recommendation" id="recommendation">${
    recommended.length > 0
      ? `Recommended: <b>${recommended.map(escapeHtml).join('</b>, <b>')}</b>, the smallest candidate limit refusing at most ${percent(r.maxAffected)} of identities.`
      : r.candidates.length > 0
        ? `No candidate refuses at most ${percent(r.maxAffected)} of identities: try higher limits.`
        : 'No candidate rules were given.'
  } From the peaks, the smallest fixed window of ${period} within that share is <b>${escapeHtml(r.exactFixedWindow.label)}</b> (${count(r.exactFixedWindow.usersAffected)} identities refused).</p>
<p>Skipped lines: <b id="skipped">${count(r.lines.skipped)}</b>${skipped.length ? ` (${skipped.map((k) => `${SKIP_REASONS[k]}: ${count(r.lines.skippedByReason[k])}`).join('; ')})` : ''}. Out of order: ${count(r.order.outOfOrder)}, of which ${count(r.order.late)} beyond the ${formatDuration(r.order.reorderWindowMs || 1)} reorder window.</p>
${r.inputErrors.map((e) => `<p><b>Input ${escapeHtml(e.input)} ended early:</b> ${escapeHtml(e.error)}</p>`).join('\n')}
<h2>Requests per identity per ${period}</h2>
<table id="percentiles"><tr><th></th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>
<tr><td>per user-period (${count(r.userPeriods.count)})</td><td>${count(r.userPeriods.p50)}</td><td>${count(r.userPeriods.p99)}</td><td>${count(r.userPeriods.p999)}</td><td>${count(r.userPeriods.max)}</td></tr>
<tr><td>peak per identity (${count(r.identities.total)})</td><td>${count(r.peakPerUser.p50)}</td><td>${count(r.peakPerUser.p99)}</td><td>${count(r.peakPerUser.p999)}</td><td>${count(r.peakPerUser.max)}</td></tr></table>
<h2>Distribution of identities by their busiest ${period}</h2>
${peakDistributionChart(r.peakHistogram, marks)}
<p class="muted">Candidate limits are drawn at their requests per ${period}${r.candidates.some((c) => c.windowMs !== r.periodMs) ? ' (a candidate of another window scaled to it)' : ''}. Identities right of a line sent more than that limit in one period.</p>
<h2>Candidates</h2>
<table id="candidates"><tr><th>candidate</th><th>requests refused</th><th>share</th><th>identities affected</th><th>share</th><th>user-periods affected</th><th>share</th><th>within ${percent(r.maxAffected)}</th></tr>
${rows}
</table>
<h2>Refused requests over time</h2>
${refusedOverTimeChart(starts, requests, series)}
<p class="muted" id="buckets">Buckets of ${formatDuration(pointMs)}${r.candidates.length > 0 ? ', whole windows of every candidate' : ''}. Grey: all requests, scaled to the chart.</p>
<h2>Busiest identities</h2>
<table id="busiest"><tr><th>identity</th><th>peak per ${period}</th></tr>
${r.busiest.map((b) => `<tr><td>${escapeHtml(b.identity.length > 80 ? `${b.identity.slice(0, 79)}…` : b.identity)}</td><td>${count(b.peak)}</td></tr>`).join('\n')}
</table>
</body></html>
`;
}

/** A limit per `windowMs` expressed per `periodMs`, for marking it on the per-period axis. */
function scaledLimit(limit: number, windowMs: number, periodMs: number): number {
  return windowMs === periodMs ? limit : (limit * periodMs) / windowMs;
}
