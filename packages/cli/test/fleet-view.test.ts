/**
 * The dashboard's view of the fleet, apart from HTTP, on the memory stores with a fake clock: what the page is told
 * (the window, the top list of the last minute, the configuration), how often the analytics are read, and that
 * every action goes through the writers' checks, a refused one writing nothing.
 */
import { emptyAnalyticsCounts, type AnalyticsSecond, type AnalyticsStore } from '@sluice/core/analytics';
import { readLimiterConfig } from '@sluice/core/config';
import { memoryAnalyticsStore, memoryConfigSource } from '@sluice/memory';
import { describe, expect, test } from 'vitest';
import { FleetView } from '../src/dashboard/fleet-view.js';

const START_SECOND = 1_800_000_000; // epoch seconds

function second(at: number, limited: number, top: [string, number][] = []): AnalyticsSecond {
  return { second: at, counts: { ...emptyAnalyticsCounts(), allowed: 1, limited }, topLimited: top };
}

/** The store, counting the seconds each read spans. */
function counted(store: AnalyticsStore): { store: AnalyticsStore; spans: number[] } {
  const spans: number[] = [];
  return {
    spans,
    store: {
      publish: (name, seconds) => store.publish(name, seconds),
      names: () => store.names(),
      read: (name, from, to) => {
        spans.push(to - from + 1);
        return store.read(name, from, to);
      },
    },
  };
}

describe('FleetView', () => {
  test('the window ends at the newest second every instance has published; the top list sums the last minute only', async () => {
    let nowMs = (START_SECOND + 101) * 1000 + 500;
    const analytics = memoryAnalyticsStore({ now: () => nowMs });
    await analytics.publish('api', [
      second(START_SECOND + 100 - 61, 50, [['old', 50]]), // older than the last minute: in the chart, not in the top list
      second(START_SECOND + 100 - 60, 4, [
        ['mallory', 3],
        ['bob', 1],
      ]),
      second(START_SECOND + 99, 5, [['mallory', 5]]),
      second(START_SECOND + 100, 9, [['now', 9]]), // the second before the current one: instances may still be publishing it
    ]);
    const view = new FleetView({ source: memoryConfigSource(), analytics, listConfigNames: undefined, now: () => nowMs });
    const state = await view.state([]);
    expect([state.from, state.to]).toEqual([START_SECOND + 99 - 899, START_SECOND + 99]);
    expect(state.namesListed).toBe(false);
    expect(state.limiters).toHaveLength(1);
    expect(state.limiters[0]!.seconds.map((s) => s.second)).toEqual([START_SECOND + 39, START_SECOND + 40, START_SECOND + 99]);
    expect(state.limiters[0]!.topLimited).toEqual([
      ['mallory', 8],
      ['bob', 1],
    ]);
    expect(state.limiters[0]!.config).toBeNull();
    // A second later the minute has moved: the newest second is in, the one 60 s old has left.
    nowMs += 1000;
    expect((await view.state([])).limiters[0]!.topLimited).toEqual([
      ['now', 9],
      ['mallory', 5],
    ]);
  });

  test('the last minute is read on every poll, the whole window every 10 s, so a late publish to an old second shows within 10 s', async () => {
    let nowMs = (START_SECOND + 1000) * 1000;
    const memory = memoryAnalyticsStore({ now: () => nowMs });
    const { store, spans } = counted(memory);
    const view = new FleetView({ source: memoryConfigSource(), analytics: store, listConfigNames: undefined, now: () => nowMs });
    await memory.publish('api', [second(START_SECOND + 900, 1)]);
    expect((await view.state([])).limiters[0]!.seconds).toHaveLength(1);
    // An instance that could not publish adds to a second 100 s old.
    await memory.publish('api', [second(START_SECOND + 900, 2)]);
    for (let poll = 1; poll < 10; poll++) {
      nowMs += 1000;
      expect((await view.state([])).limiters[0]!.seconds[0]!.counts.limited).toBe(1);
    }
    nowMs += 1000;
    expect((await view.state([])).limiters[0]!.seconds[0]!.counts.limited).toBe(3);
    expect(spans).toEqual([900, ...Array(9).fill(60), 900]);
  });

  test('polls that arrive while the state is being read share that read', async () => {
    const memory = memoryAnalyticsStore();
    await memory.publish('api', [second(Math.floor(Date.now() / 1000) - 2, 1)]);
    const { store, spans } = counted(memory);
    const view = new FleetView({ source: memoryConfigSource(), analytics: store, listConfigNames: undefined });
    const [a, b] = await Promise.all([view.state([]), view.state([])]);
    expect(a).toBe(b);
    expect(spans).toHaveLength(1);
    await view.state(['billing']);
    expect(spans).toHaveLength(3); // another set of names is another read: api, then api (last minute) and billing
  });

  test('actions go through the writers; a refused one answers why and writes nothing', async () => {
    const source = memoryConfigSource();
    const view = new FleetView({ source, analytics: undefined, listConfigNames: async () => ['api'], now: () => START_SECOND * 1000 });
    expect(await view.act({ action: 'mode', name: 'api', mode: 'shadow' })).toMatchObject({ mode: 'shadow', revision: 1 });
    const refusals: Array<[unknown, RegExp]> = [
      [{ action: 'mode', name: 'api', mode: 'loud' }, /mode must be 'enforce', 'shadow' or 'off', got "loud"/],
      [
        { action: 'drop', name: 'api' },
        /action must be one of mode, denyMode, setQuota, removeQuota, addDeny, removeDeny, restore, got "drop"/,
      ],
      [{ action: 'denyMode', name: 'api', mode: 'on' }, /mode must be 'enforce', 'shadow' or 'off', got "on"/],
      [{ action: 'setQuota', name: 'api', identity: 'acme', rules: 'gcra 10/s' }, /rules must be JSON rule specs/],
      [{ action: 'setQuota', name: 'api', identity: 'acme', rules: '{"algorithm":"gcra","limit":10}' }, /gcra: period/],
      [{ action: 'addDeny', name: 'api', match: '10.0.0.0/33' }, /written like an IP address or CIDR block but is not one/],
      [{ action: 'addDeny', name: 'api', match: 'user:1', for: 'soon' }, /for/],
      [{ action: 'addDeny', name: 'api', match: 'user:1', reason: 'x'.repeat(201) }, /reason/],
      [{ action: 'removeDeny', name: 'api', match: 'user:2' }, /no deny entry of "api" matches "user:2"/],
      [{ action: 'mode', name: '', mode: 'off' }, /name must be a non-empty string/],
      [[], /the body must be a JSON object/],
    ];
    for (const [body, message] of refusals) {
      await expect(view.act(body), JSON.stringify(body)).rejects.toMatchObject({
        code: 'INVALID_OPTION',
        detail: expect.stringMatching(message),
      });
    }
    expect((await readLimiterConfig(source, 'api'))?.revision).toBe(1);
    // The page gets the document as it is after the write, the entry in its list; the entry went to the source's deny
    // structure, so the document's revision did not move.
    expect(await view.act({ action: 'addDeny', name: 'api', match: 'user:1', for: '1h', reason: '' })).toMatchObject({
      revision: 1,
      mode: 'shadow',
      deny: [{ match: 'user:1', until: START_SECOND * 1000 + 3_600_000 }],
    });
    await view.act({ action: 'setQuota', name: 'api', identity: 'acme', rules: '[{"algorithm":"gcra","limit":10,"period":"1s"}]' });
    const state = await view.state([]);
    expect(state.limiters[0]!.config).toMatchObject({
      revision: 2,
      mode: 'shadow',
      deny: [{ match: 'user:1', until: START_SECOND * 1000 + 3_600_000 }],
      quotas: { acme: [{ algorithm: 'gcra', limit: 10, period: '1s' }] },
    });
    expect(await view.act({ action: 'removeDeny', name: 'api', match: 'user:1' })).not.toHaveProperty('deny');
    expect(await view.act({ action: 'removeQuota', name: 'api', identity: 'acme' })).not.toHaveProperty('quotas');
  });
});
