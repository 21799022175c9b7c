/**
 * Learning a third party's limit as a fleet (shared-limit-learner.ts), on a fake clock: several learners, each with
 * its own limiter as each worker process has, share one config source. A bare 429 halves the stored limit once per
 * burst and at most once per window fleet-wide, every learner adopts it, a probe upward that is refused goes back,
 * and a failing source changes nothing and throws nothing.
 */
import { describe, expect, test, vi } from 'vitest';
import { createLimiter, gcra, type Duration, type Limiter } from '@sluice/core';
import { parseLimiterConfig, watchConfig, type ConfigSource } from '@sluice/core/config';
import { memoryConfigSource, memoryStore } from '@sluice/memory';
import { QUIET_WINDOWS_SHARED, SharedLimitLearner } from '../src/fetch/shared-limit-learner.js';
import { createThrottledFetch } from '../src/fetch/throttled-fetch.js';
import { reserveStore } from './support.js';

/**
 * The memory config source answering reads with a promise, as a shared store does: `writes` counts the documents
 * stored by compare and set, `failing` makes every read reject, `stored` reads a document back for the test.
 */
class CasSource implements ConfigSource {
  private readonly inner = memoryConfigSource();
  writes = 0;
  failing: Error | undefined = undefined;
  read(name: string): Promise<string | undefined> {
    return this.failing === undefined ? Promise.resolve(this.inner.read(name)) : Promise.reject(this.failing);
  }
  stored(name: string): string | undefined {
    return this.inner.read(name);
  }
  write(name: string, text: string): void {
    this.inner.write(name, text);
  }
  remove(name: string): void {
    this.inner.remove(name);
  }
  replace(name: string, expectedRevision: number, text: string): boolean {
    const written = this.inner.replace(name, expectedRevision, text);
    if (written) this.writes++;
    return written;
  }
  subscribe(name: string, onChange: () => void): () => void {
    return this.inner.subscribe(name, onChange);
  }
}

const refused = { status: 429, headers: new Headers({ 'retry-after': '1' }) };
const ok = { status: 200, headers: new Headers() };
const ID = 'api.example.com';
const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
/** `n` refusals of requests sent under the learner's current limits, one after the other. */
async function refuse(learner: SharedLimitLearner, n = learner.refusalsToCut) {
  for (let i = 0; i < n; i++) await learner.observe(ID, refused, learner.ticket(ID));
}

function fleet(workers: number, source = new CasSource()) {
  let now = 1_000_000;
  const store = memoryStore();
  const limiters: Limiter[] = [];
  const learners = Array.from({ length: workers }, () => {
    const limiter = createLimiter({ store, name: 'third-party', rules: gcra({ id: 'api', limit: 48, period: '1s' }), clock: () => now });
    limiters.push(limiter);
    return new SharedLimitLearner(limiter, source, 1000, () => now);
  });
  const stored = () => {
    const text = source.stored('third-party');
    return text === undefined ? undefined : parseLimiterConfig(text).quotas?.[ID];
  };
  return { source, learners, limiters, stored, advance: (ms: number) => (now += ms), now: () => now };
}

describe('SharedLimitLearner', () => {
  test('eight workers refused in the same burst halve the stored limit once, and every one of them uses it', async () => {
    const { source, learners, limiters, stored, advance } = fleet(8);
    const tickets = learners.map((l) => l.ticket(ID));
    await flush();
    // Each is refused twice: 16 refusals, over the 10 (a tenth of 48 per second, over two seconds) a cut needs.
    await Promise.all(
      learners.map(async (l, i) => {
        await l.observe(ID, refused, tickets[i]!);
        await l.observe(ID, refused, tickets[i]!);
      }),
    );
    expect(source.writes).toBe(1);
    // A worker whose refusal did not cut read the store at once (maybe before the cut landed) and reads it again
    // within `refresh` (1 s here) while its requests flow.
    advance(1000);
    learners.forEach((l) => l.ticket(ID));
    await flush();
    expect(stored()).toEqual([{ algorithm: 'gcra', id: 'api', limit: 24, period: 1000, burst: 24 }]);
    for (const [i, learner] of learners.entries()) {
      expect(learner.limits(ID)).toEqual([24]);
      expect(limiters[i]!.quotas.get(ID)?.[0]).toMatchObject({ id: 'api', params: { limit: 24 } });
    }
  });

  test('at most one cut per window fleet-wide: refusals within a window of the cut do not cut again, one after it does', async () => {
    const { source, learners, stored, advance } = fleet(3);
    await refuse(learners[0]!);
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
    // The others read the cut (a refusal under the old limit makes them read), then are refused again at once.
    await learners[1]!.observe(ID, refused, 0);
    await learners[2]!.observe(ID, refused, 0);
    await flush();
    advance(999);
    await Promise.all(learners.map((l) => l.observe(ID, refused, l.ticket(ID))));
    await flush();
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
    expect(source.writes).toBe(1);
    advance(1);
    await refuse(learners[1]!); // refused enough under 24, a window after it was adopted
    expect(stored()?.[0]).toMatchObject({ limit: 12 });
    expect(source.writes).toBe(2);
  });

  test('a refusal of a request sent under limits since replaced adopts the stored ones and cuts nothing', async () => {
    const { source, learners, advance } = fleet(2);
    const stale = learners[1]!.ticket(ID);
    await flush();
    await refuse(learners[0]!);
    advance(5000); // long after: the stale request still says nothing about the new limit
    await learners[1]!.observe(ID, refused, stale);
    await flush();
    expect(source.writes).toBe(1);
    expect(learners[1]!.limits(ID)).toEqual([24]);
  });

  test('a probe upward after the quiet time; a refused probe goes back (not halved) and the next probe waits twice as long', async () => {
    const { learners, stored, advance } = fleet(2);
    const [a, b] = learners as [SharedLimitLearner, SharedLimitLearner];
    await refuse(a);
    await b.observe(ID, ok, b.ticket(ID));
    await flush();
    expect(b.limits(ID)).toEqual([24]);
    const quiet = QUIET_WINDOWS_SHARED * 1000;
    advance(quiet - 1);
    await a.observe(ID, ok, a.ticket(ID));
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
    advance(1);
    await a.observe(ID, ok, a.ticket(ID));
    expect(stored()?.[0]).toMatchObject({ limit: 28 }); // a tenth of the written 48, rounded down, per probe
    advance(1000);
    await b.observe(ID, ok, b.ticket(ID)); // b reads the probe (its refresh is due)
    await flush();
    expect(b.limits(ID)).toEqual([28]);
    await b.observe(ID, refused, b.ticket(ID));
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
    advance(quiet);
    await b.observe(ID, ok, b.ticket(ID));
    expect(stored()?.[0]).toMatchObject({ limit: 24 }); // b saw its probe fail: its quiet time is doubled
    advance(quiet);
    await b.observe(ID, ok, b.ticket(ID));
    expect(stored()?.[0]).toMatchObject({ limit: 28 });
  });

  test("a refusal confirmed while a read adopts another worker's cut does not cut again from the adopted limit", async () => {
    const { learners, stored, source } = fleet(2);
    const [a, b] = learners as [SharedLimitLearner, SharedLimitLearner];
    await refuse(a);
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
    const ticket = b.ticket(ID); // b's first ticket starts a read, which adopts 24 while its refusal is being counted
    await b.observe(ID, refused, ticket);
    await flush();
    expect(b.limits(ID)).toEqual([24]);
    expect(source.writes).toBe(1);
  });

  test('a few 429s do not cut: refusals within two windows fleet-wide must reach a tenth of what the rule allows in two windows', async () => {
    const { learners, stored, advance } = fleet(3);
    expect(learners[0]!.refusalsToCut).toBe(10); // 48 per second: a tenth of 96
    await refuse(learners[0]!, 4);
    advance(2000); // those have left the two windows
    await refuse(learners[1]!, 5);
    advance(1000);
    await refuse(learners[2]!, 4);
    expect(stored()).toBeUndefined();
    advance(500);
    await refuse(learners[0]!, 1); // the tenth within two windows, from any worker
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
  });

  test('refusals counted before a cut do not count towards the next one', async () => {
    const { learners, stored, advance } = fleet(2);
    const [a, b] = learners as [SharedLimitLearner, SharedLimitLearner];
    await refuse(a, 19); // 10 cut 48 to 24; 9 more arrive before b knows (sent under 48)
    expect(stored()?.[0]).toMatchObject({ limit: 24 });
    advance(1000);
    await refuse(b, 1); // b adopts 24
    await flush();
    advance(1000);
    await refuse(b, 9);
    expect(stored()?.[0]).toMatchObject({ limit: 24 }); // 9 under 24, within two windows of the 19 under 48
    await refuse(b, 1);
    expect(stored()?.[0]).toMatchObject({ limit: 12 });
  });

  test('a rule with a small limit still needs three refusals', () => {
    const limiter = createLimiter({ store: memoryStore(), name: 'slow', rules: gcra({ id: 'api', limit: 2, period: '1s' }) });
    expect(new SharedLimitLearner(limiter, new CasSource(), 1000).refusalsToCut).toBe(3);
  });

  test('a stated limit is shared too, and back at the written limit the quota is removed', async () => {
    const { learners, stored, source } = fleet(2);
    const [a, b] = learners as [SharedLimitLearner, SharedLimitLearner];
    await a.observe(ID, { status: 200, headers: new Headers({ 'x-ratelimit-limit': '20' }) }, a.ticket(ID));
    expect(stored()?.[0]).toMatchObject({ limit: 20 });
    await b.observe(ID, { status: 200, headers: new Headers({ 'x-ratelimit-limit': '20' }) }, b.ticket(ID));
    expect(source.writes).toBe(1); // b found it stored already
    await b.observe(ID, { status: 200, headers: new Headers({ 'x-ratelimit-limit': '100' }) }, b.ticket(ID));
    expect(stored()).toBeUndefined();
    expect(b.limits(ID)).toEqual([48]);
  });

  test("the learned quota is the identity's quota in the limiter's document: watchConfig applies it to a limiter that does not learn", async () => {
    const { learners, source } = fleet(1);
    const watching = createLimiter({ store: memoryStore(), name: 'third-party', rules: gcra({ id: 'api', limit: 48, period: '1s' }) });
    const watcher = watchConfig(watching, source);
    await watcher.ready;
    await refuse(learners[0]!);
    await vi.waitFor(() => expect(watching.quotas.get(ID)?.[0]).toMatchObject({ params: { limit: 24 } }));
    await watcher.stop();
  });

  test('a source that fails changes nothing and rejects nothing', async () => {
    const { learners, source } = fleet(1);
    source.failing = new Error('connection refused');
    for (let i = 0; i < learners[0]!.refusalsToCut; i++)
      await expect(learners[0]!.observe(ID, refused, learners[0]!.ticket(ID))).resolves.toBeUndefined();
    await flush();
    expect(learners[0]!.limits(ID)).toEqual([48]);
  });
});

describe('createThrottledFetch learn: { source }', () => {
  test('a bad learn option names the field and what is accepted', () => {
    const limiter = createLimiter({ store: memoryStore(), rules: gcra({ limit: 10, period: '1s' }) });
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', learn: 'yes' as never })).toThrow(
      /learn must be true, false or \{ source \}/,
    );
    expect(() =>
      createThrottledFetch({
        limiter,
        maxWait: '1s',
        learn: { source: { read: () => undefined, write: () => undefined, remove: () => undefined } },
      }),
    ).toThrow(/learn\.source must be a config source with read and replace/);
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', learn: { source: new CasSource(), refresh: -1 } })).toThrow(
      /learn\.refresh/,
    );
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', learn: { source: new CasSource(), every: 1 } as never })).toThrow(/every/);
  });

  test('ten bare 429s through the throttled fetch halve the limit stored for the host', async () => {
    const source = new CasSource();
    const limiter = createLimiter({ store: reserveStore(), name: 'third-party', rules: gcra({ id: 'api', limit: 48, period: '1s' }) });
    let status = 200;
    const fetchApi = createThrottledFetch({
      limiter,
      maxWait: '5s',
      learn: { source },
      fetch: async (_input: string) => ({ status, headers: new Headers() }),
    });
    await fetchApi('https://api.example.com/v1');
    status = 429;
    for (let i = 0; i < 10; i++) await fetchApi('https://api.example.com/v1'); // a tenth of 48 per second, over two seconds
    expect(parseLimiterConfig(source.stored('third-party')!).quotas?.['api.example.com']?.[0]).toMatchObject({ limit: 24 });
    expect(limiter.quotas.get('api.example.com')?.[0]).toMatchObject({ params: { limit: 24 } });
  });
});

describe('createThrottledFetch: a slot booked before a cut', () => {
  /**
   * Worker A is a throttled fetch whose second booking (the first after a request sent and answered: a throttled
   * fetch that has sent nothing yet books one request at a time) is held until `release`; worker B is another
   * process's learner.
   */
  function workers(maxWait: Duration = '5s', holdMs = 0, onHeld: () => void = () => {}) {
    const source = new CasSource();
    const store = reserveStore();
    const limiter = createLimiter({ store, name: 'third-party', rules: gcra({ id: 'api', limit: 48, period: '1s' }) });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let waits = 0;
    const maxWaits: Duration[] = [];
    const reserve = limiter.reserve.bind(limiter);
    // The throttled fetch books with reserve (pushBack too, after a refusal: these answers are 200s).
    vi.spyOn(limiter, 'reserve').mockImplementation(async (identity, options) => {
      waits++;
      maxWaits.push(options.maxWait);
      if (waits !== 2) return reserve(identity, options);
      const asked = Date.now();
      await held;
      // The first booking's slot started this long after it was booked.
      await new Promise((resolve) => setTimeout(resolve, holdMs));
      const booked = await reserve(identity, options);
      onHeld();
      // As a store answers it: booked when asked, for a slot that starts now (not a slot missed).
      return { ...booked, now: asked, startAt: booked.now };
    });
    const fetchApi = createThrottledFetch({
      limiter,
      maxWait,
      learn: { source, refresh: '10ms' },
      fetch: async (_input: string) => ok,
    });
    const other = createLimiter({ store, name: 'third-party', rules: gcra({ id: 'api', limit: 48, period: '1s' }) });
    const b = new SharedLimitLearner(other, source, 1000);
    return { fetchApi, b, release, waits: () => waits, maxWaits };
  }

  test('is booked again under the lower limit once this process has adopted the cut', async () => {
    const { fetchApi, b, release, waits } = workers();
    await fetchApi('https://api.example.com/v1');
    const first = fetchApi('https://api.example.com/v1');
    await refuse(b); // another worker cuts 48 to 24
    await new Promise((resolve) => setTimeout(resolve, 20));
    // This request's ticket starts the read that adopts the cut in worker A, while it waits: booked under 48 too.
    await fetchApi('https://api.example.com/v1');
    release();
    await first;
    expect(waits()).toBe(5); // after the first, both requests waited twice
  });

  test("is booked again within what is left of maxWait, so the caller's whole wait stays within it", async () => {
    const { fetchApi, b, release, maxWaits } = workers(400, 300);
    await fetchApi('https://api.example.com/v1');
    const first = fetchApi('https://api.example.com/v1');
    await refuse(b);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await fetchApi('https://api.example.com/v1');
    release();
    await first;
    // The first request waited at least 300 ms on its first booking: its second may wait 100 ms at most, not 400.
    expect(maxWaits[1]).toBe(400);
    expect(maxWaits.at(-1)).toBeLessThanOrEqual(100);
    expect(maxWaits.at(-1)).toBeGreaterThanOrEqual(0);
  });

  test('is booked again within maxWait even when the wall clock stepped back during the first wait', async () => {
    const realNow = Date.now.bind(Date);
    let offset = 0;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
    try {
      const { fetchApi, b, release, maxWaits } = workers(400, 50, () => (offset = -60_000));
      await fetchApi('https://api.example.com/v1');
      const first = fetchApi('https://api.example.com/v1');
      await refuse(b);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await fetchApi('https://api.example.com/v1');
      release();
      // Booked again for at most maxWait: the limiter, on the same stepped-back clock, finds no slot that soon and
      // says so at once (with the clock's 60 s added, the caller would wait a minute).
      await expect(first).rejects.toMatchObject({ code: 'WAIT_TOO_LONG' });
      expect(maxWaits.at(-1)).toBeLessThanOrEqual(400);
    } finally {
      clock.mockRestore();
    }
  });

  test('is sent as booked when no limit was lowered while it waited', async () => {
    const { fetchApi, release, waits } = workers();
    await fetchApi('https://api.example.com/v1');
    const first = fetchApi('https://api.example.com/v1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await fetchApi('https://api.example.com/v1');
    release();
    await first;
    expect(waits()).toBe(3);
  });
});
