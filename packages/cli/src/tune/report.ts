/**
 * The result of `tune` as plain data: what `--json` prints, and what the terminal table and the HTML report
 * render. Shares are fractions (0.001 is 0.1%); times are epoch ms; every count is exact.
 */
import { formatDuration } from './candidates.js';
import type { Histogram } from './histogram.js';
import type { SkipReason } from './line-result.js';
import type { Replay } from './replay.js';
import type { TimelineBucket } from './timeline.js';

export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

export interface CandidateReport {
  readonly label: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly requestsRefused: number;
  readonly requestsRefusedShare: number;
  readonly usersAffected: number;
  readonly usersAffectedShare: number;
  readonly userPeriodsAffected: number;
  readonly userPeriodsAffectedShare: number;
  /** Refuses at most `maxAffected` of the identities. */
  readonly withinTarget: boolean;
}

export interface Recommendation {
  readonly algorithm: string;
  readonly windowMs: number;
  /** The smallest candidate limit of this algorithm and window within the target; null when none is. */
  readonly label: string | null;
  readonly limit: number | null;
}

export interface TuneReport {
  readonly version: 1;
  readonly inputs: readonly string[];
  readonly inputErrors: ReadonlyArray<{ readonly input: string; readonly error: string }>;
  readonly formats: readonly string[];
  readonly bytes: number;
  readonly lines: {
    /** Non-blank lines read. */
    readonly read: number;
    /** Lines replayed (read minus skipped). */
    readonly replayed: number;
    readonly skipped: number;
    readonly skippedByReason: Readonly<Record<SkipReason, number>>;
    /** JSON lines read by the field scan and by JSON.parse. */
    readonly scanned: number;
    readonly jsonParsed: number;
  };
  readonly order: { readonly reorderWindowMs: number; readonly outOfOrder: number; readonly late: number; readonly forced: number };
  readonly time: { readonly first: number | null; readonly last: number | null };
  readonly identities: { readonly total: number; readonly users: number; readonly ips: number };
  readonly periodMs: number;
  /** Requests per identity per period, over the user-periods with at least one request. */
  readonly userPeriods: Percentiles & { readonly count: number };
  /** Each identity's largest count in one period, over the identities (`MAX(Used)` in the article 'Rate Limiting'). */
  readonly peakPerUser: Percentiles;
  /** [requests in the identity's busiest period, identities] by ascending count. */
  readonly peakHistogram: ReadonlyArray<readonly [number, number]>;
  readonly busiest: ReadonlyArray<{ readonly identity: string; readonly peak: number }>;
  readonly maxAffected: number;
  readonly candidates: readonly CandidateReport[];
  readonly recommendations: readonly Recommendation[];
  /**
   * Read off the peaks rather than replayed: the smallest limit for a fixed window of one period, aligned as
   * core's fixedWindow aligns it, that refuses at most `maxAffected` of the identities.
   */
  readonly exactFixedWindow: { readonly label: string; readonly limit: number; readonly usersAffected: number };
  readonly timeline: { readonly bucketMs: number; readonly buckets: readonly TimelineBucket[] };
  readonly elapsedMs: number;
}

export interface ReportInput {
  inputs: string[];
  inputErrors: Array<{ input: string; error: string }>;
  formats: string[];
  bytes: number;
  lines: number;
  skipped: Record<SkipReason, number>;
  scanned: number;
  jsonParsed: number;
  reorder: { windowMs: number; outOfOrder: number; late: number; forced: number };
  /** Identity names by number (`IdentityTable.names`). */
  identities: { readonly names: readonly string[] };
  replay: Replay;
  maxAffected: number;
  elapsedMs: number;
}

function percentiles(h: Histogram): Percentiles {
  return { p50: h.quantile(0.5), p99: h.quantile(0.99), p999: h.quantile(0.999), max: h.max() };
}

const share = (n: number, of: number) => (of === 0 ? 0 : n / of);

export function buildReport(input: ReportInput): TuneReport {
  const { replay, identities } = input;
  const total = replay.identities;
  const peaks = replay.peaks();
  const allowed = input.maxAffected * total;
  const candidates = replay.outcomes().map((o) => ({
    ...o,
    requestsRefusedShare: share(o.requestsRefused, replay.requests),
    usersAffectedShare: share(o.usersAffected, total),
    userPeriodsAffectedShare: share(o.userPeriodsAffected, replay.userPeriods.total),
    withinTarget: o.usersAffected <= allowed,
  }));
  const recommendations: Recommendation[] = [];
  for (const c of candidates) {
    let group = recommendations.find((r) => r.algorithm === c.algorithm && r.windowMs === c.windowMs);
    if (group === undefined) {
      group = { algorithm: c.algorithm, windowMs: c.windowMs, label: null, limit: null };
      recommendations.push(group);
    }
    if (c.withinTarget && (group.limit === null || c.limit < group.limit)) {
      Object.assign(group, { label: c.label, limit: c.limit });
    }
  }
  const exactLimit = peaks.smallestLimitWithAtMost(Math.floor(allowed));
  const skipped = Object.values(input.skipped).reduce((a, b) => a + b, 0);
  let users = 0;
  for (const name of identities.names) if (name.startsWith('user:')) users++;
  return {
    version: 1,
    inputs: input.inputs,
    inputErrors: input.inputErrors,
    formats: input.formats,
    bytes: input.bytes,
    lines: {
      read: input.lines,
      replayed: replay.requests,
      skipped,
      skippedByReason: input.skipped,
      scanned: input.scanned,
      jsonParsed: input.jsonParsed,
    },
    order: {
      reorderWindowMs: input.reorder.windowMs,
      outOfOrder: input.reorder.outOfOrder,
      late: input.reorder.late,
      forced: input.reorder.forced,
    },
    time: { first: replay.requests > 0 ? replay.firstTime : null, last: replay.requests > 0 ? replay.lastTime : null },
    identities: { total, users, ips: total - users },
    periodMs: replay.periodMs,
    userPeriods: { ...percentiles(replay.userPeriods), count: replay.userPeriods.total },
    peakPerUser: percentiles(peaks),
    peakHistogram: peaks.entries(),
    busiest: replay.busiest(10).map(({ identity, peak }) => ({ identity: identities.names[identity]!, peak })),
    maxAffected: input.maxAffected,
    candidates,
    recommendations,
    exactFixedWindow: {
      label: `fixed-window:${exactLimit}/${formatDuration(replay.periodMs)}`,
      limit: exactLimit,
      usersAffected: peaks.above(exactLimit),
    },
    timeline: { bucketMs: replay.timeline.bucketMs, buckets: replay.timeline.list() },
    elapsedMs: input.elapsedMs,
  };
}
