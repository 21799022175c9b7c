import { createLimiter } from '@sluice/core';
import { formatIp, maskIp, parseAddressText } from '@sluice/http/ip';
import { memoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { generateLogLines, parseRuleFlag } from '../src/index.js';
import { ReorderBuffer } from '../src/tune/reorder.js';
import { Replay } from '../src/tune/replay.js';
import { tuneText } from './helpers.js';

/** The identity of a generated JSON line, worked out here from the line and @sluice/http's address functions. */
function identityOf(record: { user_id?: string | null; ip: string }): string {
  if (typeof record.user_id === 'string' && record.user_id !== '') return `user:${record.user_id}`;
  const address = parseAddressText(record.ip, { allowPort: true, stripZone: true })!;
  return address.version === 4 ? `ip:${formatIp(address)}` : `ip:${formatIp(maskIp(address, 56))}/56`;
}

describe('replay', () => {
  it('refuses exactly what createLimiter on the memory store refuses, candidate by candidate', async () => {
    // Few users and a high rate, so every candidate refuses a good share; reorder 0 replays in file order.
    const text = [...generateLogLines({ lines: 6000, users: 40, ratePerSecond: 50, seed: 11 })].join('');
    const specs = [
      'fixed-window:30/1m',
      'sliding-window-counter:30/1m',
      'sliding-window-log:30/1m',
      'token-bucket:30/1m:burst=10',
      'leaky-bucket:20/1m',
      'gcra:30/1m:burst=5',
    ];
    const candidates = specs.map(parseRuleFlag);
    const report = await tuneText(text, { candidates, reorderMs: 0 });
    const records = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { time: string; user_id?: string | null; ip: string });
    expect(report.lines.replayed).toBe(records.length);

    candidates.forEach((candidate, k) => {
      let now = 0;
      const limiter = createLimiter({ store: memoryStore(), rules: candidate.rule, clock: () => now });
      let refused = 0;
      const affected = new Set<string>();
      for (const record of records) {
        now = Date.parse(record.time);
        const identity = identityOf(record);
        if (!limiter.limitSync(identity).allowed) {
          refused++;
          affected.add(identity);
        }
      }
      const outcome = report.candidates[k]!;
      expect(refused, candidate.label).toBeGreaterThan(0);
      expect({ label: outcome.label, refused: outcome.requestsRefused, users: outcome.usersAffected }).toEqual({
        label: candidate.label,
        refused,
        users: affected.size,
      });
    });
  });

  it('puts lines back in time order within the reorder window, and replays later ones with the clock stepping back', () => {
    const released: number[] = [];
    const buffer = new ReorderBuffer(1000, (_identity, time) => released.push(time));
    // Each line up to 900 ms late (within the 1 s window), then one 5 s late.
    const times: number[] = [];
    let x = 7;
    for (let i = 0; i < 5000; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      times.push(i * 10 - (x % 900));
    }
    // 60,000 is released when 62,000 arrives; 55,000 comes after that, later than the window.
    times.push(60_000, 62_000, 55_000);
    for (const t of times) buffer.push(0, t);
    buffer.flush();
    expect(released).toHaveLength(times.length);
    expect(released.slice(0, 5000)).toEqual([...times.slice(0, 5000)].sort((a, b) => a - b));
    expect(released.slice(5000)).toEqual([60_000, 55_000, 62_000]);
    expect(buffer.late).toBe(1);
  });
});

describe('memory', () => {
  /**
   * What a replay holds, counted in numbers: every per-identity array (their capacity), the sliding window logs'
   * own arrays, the timeline's buckets and the user-period histogram's sparse entries.
   */
  function footprint(replay: Replay): number {
    const held = replay as unknown as Record<string, ArrayLike<unknown>>;
    let total = 0;
    for (const field of ['period', 'inPeriod', 'peak', 'flat', 'lengths', 'expiresAt', 'refusedIn']) total += held[field]!.length;
    for (const state of held.states as Array<number[] | undefined>) total += state === undefined ? 1 : state.length + 1;
    total += (replay.timeline as unknown as { buckets: Map<number, Float64Array> }).buckets.size;
    total += (replay.userPeriods as unknown as { sparse: Map<number, number> }).sparse.size;
    return total;
  }

  /** `lines` requests of `identities` identities in turn, spread evenly over one day. */
  function replayed(lines: number, identities: number): Replay {
    const candidates = ['fixed-window:30/1m', 'sliding-window-log:30/1m', 'gcra:30/1m:burst=5'].map(parseRuleFlag);
    const replay = new Replay(candidates, 3_600_000);
    const day = 86_400_000;
    const start = Date.UTC(2026, 0, 1);
    for (let i = 0; i < lines; i++) replay.request(i % identities, start + Math.floor((i * day) / lines));
    replay.finish();
    return replay;
  }

  it('grows with the identities, never with the lines: ten times the lines of the same identities hold the same', () => {
    // 300,000 lines of 3 identities in a day: about 70 a minute each, past every limit, so each sliding window log
    // already holds all it can (its limit, 30); 3,000,000 lines then add nothing.
    const few = replayed(300_000, 3);
    const many = replayed(3_000_000, 3);
    expect(many.requests).toBe(3_000_000);
    expect(many.identities).toBe(3);
    expect(footprint(many)).toBe(footprint(few));
    // The measure sees identities: 3,000 of them hold more than 3.
    expect(footprint(replayed(300_000, 3_000))).toBeGreaterThan(2 * footprint(few));
  });
});

describe('recommendation', () => {
  it('is the smallest candidate refusing at most the share of identities, known by construction', async () => {
    // 1,000 users; user i sends i requests, all within one aligned minute. A fixed window of 1m and limit L
    // refuses exactly the users with i > L, so at most 1% (10 users) refused means L >= 990.
    const t0 = Date.UTC(2024, 4, 1, 12, 0);
    const lines: string[] = [];
    for (let i = 1; i <= 1000; i++) {
      for (let j = 0; j < i; j++) lines.push(`{"time":${t0 + ((i * 7 + j * 13) % 60_000)},"user_id":"u${i}"}`);
    }
    const candidates = [980, 990, 1000, 985].map((limit) => parseRuleFlag(`fixed-window:${limit}/1m`));
    const report = await tuneText(lines.join('\n'), { candidates, maxAffected: 0.01 });
    expect(report.candidates.map((c) => c.usersAffected)).toEqual([20, 10, 0, 15]);
    expect(report.candidates.map((c) => c.requestsRefused)).toEqual([210, 55, 0, 120]);
    expect(report.recommendations).toEqual([{ algorithm: 'fixed-window', windowMs: 60_000, label: 'fixed-window:990/1m', limit: 990 }]);
    expect(report.exactFixedWindow).toEqual({ label: 'fixed-window:990/1m', limit: 990, usersAffected: 10 });
    expect(report.peakPerUser).toEqual({ p50: 500, p99: 990, p999: 999, max: 1000 });
    expect(report.userPeriods.count).toBe(1000);
  });

  it('recommends nothing when every candidate refuses too many, and says so', async () => {
    const t0 = Date.UTC(2024, 4, 1, 12, 0);
    const lines = Array.from({ length: 50 }, (_, j) => `{"time":${t0 + j},"user_id":"only"}`);
    const report = await tuneText(lines.join('\n'), { candidates: [parseRuleFlag('fixed-window:10/1m')] });
    expect(report.recommendations[0]!.label).toBeNull();
    expect(report.exactFixedWindow.limit).toBe(50);
  });
});
