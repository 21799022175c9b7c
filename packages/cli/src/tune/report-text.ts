/** The terminal summary of a tune report. */
import { formatDuration } from './candidates.js';
import { bytes, count, isoTime, percent, table } from '../format.js';
import { SKIP_REASONS, type SkipReason } from './line-result.js';
import type { TuneReport } from './report.js';

export function textReport(r: TuneReport): string {
  const out: string[] = [];
  const period = formatDuration(r.periodMs);
  const rate = r.elapsedMs > 0 ? (r.lines.read / r.elapsedMs) * 1000 : 0;
  out.push(
    `Read ${count(r.lines.read)} lines (${bytes(r.bytes)}, ${r.formats.join(' + ') || 'no'} format) in ${(r.elapsedMs / 1000).toFixed(1)} s: ${count(rate)} lines/s`,
  );
  const reasons = (Object.keys(r.lines.skippedByReason) as SkipReason[]).filter((k) => r.lines.skippedByReason[k] > 0);
  out.push(
    `Replayed ${count(r.lines.replayed)}; skipped ${count(r.lines.skipped)}${reasons.length ? `: ${reasons.map((k) => `${SKIP_REASONS[k]} ${count(r.lines.skippedByReason[k])}`).join(', ')}` : ''}`,
  );
  for (const e of r.inputErrors) out.push(`Input ${e.input} ended early: ${e.error} (the lines before were used)`);
  if (r.order.outOfOrder > 0) {
    out.push(
      `Out of order: ${count(r.order.outOfOrder)} lines, put back in time order within ${formatDuration(r.order.reorderWindowMs || 1)}` +
        (r.order.late > 0 ? `; ${count(r.order.late)} later than that, replayed with the clock stepping back` : ''),
    );
  }
  out.push(
    `Time ${isoTime(r.time.first)} to ${isoTime(r.time.last)}; ${count(r.identities.total)} identities (${count(r.identities.users)} users, ${count(r.identities.ips)} by IP)`,
  );
  out.push('');
  out.push(
    table([
      [`Requests per identity per ${period}`, 'p50', 'p99', 'p99.9', 'max'],
      [
        `per user-period (${count(r.userPeriods.count)})`,
        count(r.userPeriods.p50),
        count(r.userPeriods.p99),
        count(r.userPeriods.p999),
        count(r.userPeriods.max),
      ],
      [
        `peak per identity (${count(r.identities.total)})`,
        count(r.peakPerUser.p50),
        count(r.peakPerUser.p99),
        count(r.peakPerUser.p999),
        count(r.peakPerUser.max),
      ],
    ]),
  );
  out.push('');
  if (r.candidates.length > 0) {
    const rows: string[][] = [['candidate', 'requests refused', 'identities affected', `user-periods (${period}) affected`, '']];
    for (const c of r.candidates) {
      rows.push([
        c.label,
        `${count(c.requestsRefused)} (${percent(c.requestsRefusedShare)})`,
        `${count(c.usersAffected)} (${percent(c.usersAffectedShare)})`,
        `${count(c.userPeriodsAffected)} (${percent(c.userPeriodsAffectedShare)})`,
        c.withinTarget ? 'within target' : '',
      ]);
    }
    out.push(table(rows));
    out.push('');
    for (const rec of r.recommendations) {
      out.push(
        rec.label === null
          ? `No ${rec.algorithm} per ${formatDuration(rec.windowMs)} candidate refuses at most ${percent(r.maxAffected)} of identities: try higher limits.`
          : `Recommended: ${rec.label} (the smallest candidate of its kind refusing at most ${percent(r.maxAffected)} of identities)`,
      );
    }
  }
  const e = r.exactFixedWindow;
  out.push(
    `From the peaks: ${e.label} is the smallest fixed window of ${period} that refuses at most ${percent(r.maxAffected)} of identities (${count(e.usersAffected)} of ${count(r.identities.total)}).`,
  );
  if (r.busiest.length > 0) {
    out.push('');
    out.push(
      `Busiest identities (peak per ${period}): ${r.busiest
        .slice(0, 5)
        .map((b) => `${shorten(b.identity)} ${count(b.peak)}`)
        .join(', ')}`,
    );
  }
  return out.join('\n');
}

function shorten(identity: string): string {
  return identity.length > 40 ? `${identity.slice(0, 39)}…` : identity;
}
