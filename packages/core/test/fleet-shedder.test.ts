/**
 * The fleet-usage shedder (from the article 'Scaling your API with rate limiters') over a lease store: a reserve of
 * the capacity for the first class, the least important class shed first, 503-style `shed` refusals, shared by every
 * instance that counts on the same store.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Store } from '../src/index.js';
import { createFleetShedder, type FleetShedderOptions } from '../src/shedding/index.js';
import { evaluateLease, type LeaseEntries, type LeaseRequest, type LeaseResult } from '../src/store/index.js';

/** A shared lease store over a Map (what several instances would reach over the network). */
class LeaseStore implements Store {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'lease'] } as const;
  private readonly records = new Map<string, LeaseEntries>();

  limit(): never {
    throw new Error('not used');
  }

  reset(): void {}

  lease(request: LeaseRequest): Promise<LeaseResult> {
    const evaluation = evaluateLease(this.records.get(request.key), request, request.now);
    this.records.set(request.key, evaluation.entries);
    return Promise.resolve(evaluation.result);
  }
}

const CLOCK_START = 1_700_000_000_000;

function fleet(store: Store, options: Partial<FleetShedderOptions> = {}) {
  return createFleetShedder({ store, capacity: 10, reserve: 0.2, clock: () => CLOCK_START, ...options });
}

describe('createFleetShedder', () => {
  test('two classes, critical and non-critical: non-critical work is shed past 80% of the capacity, critical passes up to 100%', async () => {
    const store = new LeaseStore();
    const shedder = fleet(store, { classes: ['critical', 'normal'] });
    expect([shedder.limitFor('critical'), shedder.limitFor('normal')]).toEqual([10, 8]);
    const normal = await Promise.all(Array.from({ length: 9 }, () => shedder.acquire('normal')));
    expect(normal.filter((d) => d.allowed)).toHaveLength(8);
    expect(normal.find((d) => !d.allowed)).toMatchObject({ reason: 'shed', priority: 'normal', held: 8 });
    const critical = await Promise.all(Array.from({ length: 3 }, () => shedder.acquire('critical')));
    expect(critical.map((d) => d.allowed)).toEqual([true, true, false]);
    // Another instance on the same store sees the same fleet.
    expect(await fleet(store, { classes: ['critical', 'normal'] }).acquire('critical')).toMatchObject({ allowed: false, held: 10 });
    await normal[0]!.lease!.release();
    await normal[1]!.lease!.release();
    await normal[2]!.lease!.release();
    expect((await shedder.acquire('normal')).allowed).toBe(true);
  });

  test('the defaults (reserve 0.2, four classes): the last share is exactly 80% of the capacity, floored, where floating point falls just short', () => {
    const sharesOf = (capacity: number) => {
      const shedder = fleet(new LeaseStore(), { capacity, reserve: undefined });
      return shedder.classes.map((c) => shedder.limitFor(c));
    };
    // 1 − 0.6 / 3 is 0.7999999999999999 in binary floating point: 20 × that floors to 15, and 1000 × that to 799.
    expect(sharesOf(20)).toEqual([20, 18, 17, 16]);
    expect(sharesOf(400)).toEqual([400, 373, 346, 320]);
    expect(sharesOf(1000)).toEqual([1000, 933, 866, 800]);
  });

  test('any capacity, reserve and number of classes: the first share is the capacity, the last floor((1 − reserve) × capacity) exactly (at least 1), never increasing between', () => {
    // The reserve drawn as a decimal, digits ÷ 10^places, so the exact answer is computed here in integers, apart
    // from the shedder's own arithmetic.
    const reserve = fc
      .integer({ min: 0, max: 6 })
      .chain((places) =>
        fc.integer({ min: 0, max: 10 ** places - 1 }).map((digits) => ({ digits: BigInt(digits), scale: 10n ** BigInt(places) })),
      );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), reserve, fc.integer({ min: 1, max: 8 }), (capacity, { digits, scale }, count) => {
        const classes = Array.from({ length: count }, (_, i) => `class-${i}`);
        const shedder = fleet(new LeaseStore(), { capacity, reserve: Number(digits) / Number(scale), classes });
        const shares = classes.map((c) => shedder.limitFor(c));
        expect(shares[0]).toBe(capacity);
        const exact = Number((BigInt(capacity) * (scale - digits)) / scale);
        if (count > 1) expect(shares[count - 1]).toBe(Math.max(1, exact));
        for (let i = 1; i < count; i++) expect(shares[i]).toBeLessThanOrEqual(shares[i - 1]!);
      }),
      { numRuns: 2000 },
    );
  });

  test('any reserve a program computes (any double from 0 up to 1): first share the capacity, never increasing, the last within one of (1 − reserve) × capacity', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 2, max: 8 }),
        (capacity, reserve, count) => {
          const classes = Array.from({ length: count }, (_, i) => `class-${i}`);
          const shedder = fleet(new LeaseStore(), { capacity, reserve, classes });
          const shares = classes.map((c) => shedder.limitFor(c));
          expect(shares[0]).toBe(capacity);
          for (let i = 1; i < count; i++) expect(shares[i]).toBeLessThanOrEqual(shares[i - 1]!);
          expect(Math.abs(shares[count - 1]! - Math.max(1, Math.floor((1 - reserve) * capacity)))).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('four classes: test traffic goes first, then reads, then writes; critical last', async () => {
    const shedder = fleet(new LeaseStore(), { capacity: 100, reserve: 0.3 });
    expect(shedder.classes.map((c) => shedder.limitFor(c))).toEqual([100, 90, 80, 70]);
    for (let i = 0; i < 70; i++) expect((await shedder.acquire('critical')).allowed).toBe(true);
    expect(await shedder.acquire('test')).toMatchObject({ allowed: false, reason: 'shed' });
    expect((await shedder.acquire('read')).allowed).toBe(true);
  });

  test('shadow reports and never sheds; configure changes the capacity live; errors name the field', async () => {
    const shedder = fleet(new LeaseStore(), { capacity: 1, classes: ['critical', 'normal'] });
    expect((await shedder.acquire('critical')).allowed).toBe(true);
    shedder.configure({ mode: 'shadow' });
    expect(await shedder.acquire('normal')).toMatchObject({ allowed: true, reason: 'shadow' });
    shedder.configure({ mode: 'enforce', capacity: 5 });
    expect(shedder.limitFor('normal')).toBe(4);
    expect((await shedder.acquire('normal')).allowed).toBe(true);
    await expect(shedder.acquire('vip')).rejects.toThrow(/unknown priority class "vip"/);
    expect(() => fleet(new LeaseStore(), { reserve: 1 })).toThrow(/reserve must be a fraction from 0/);
    expect(() => fleet(new LeaseStore(), { capacity: 0 })).toThrow(/capacity must be a positive integer/);
    expect(() => fleet(new LeaseStore(), { limit: 3 } as unknown as Partial<FleetShedderOptions>)).toThrow(/unknown option "limit"/);
  });
});
