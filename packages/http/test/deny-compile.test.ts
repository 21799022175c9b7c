import { fixedWindow } from '@sluice/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMPILE_AT_ONCE, COMPILE_PART, readyMatcher } from '../src/handler/deny/compile.js';
import { createHandler, matchDenyList, type DenyEntry, type ErrorEvent, type HandleResult } from '../src/index.js';
import { memoryLimiter, request } from './support.js';

/** `count` identity entries `user:<from>`… plus the extra ones: the long lists a busy deny list grows to. */
function longList(count: number, from: number, ...extra: DenyEntry[]): DenyEntry[] {
  return [...Array.from({ length: count }, (_, i) => ({ match: `user:${from + i}` })), ...extra];
}

/** The client identity's IPv6 grouping when clientIp leaves it out. */
const DEFAULT_IPV6_PREFIX = 56;

function setup() {
  const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1000, window: '10s' }) });
  const errors: ErrorEvent<unknown>[] = [];
  const handler = createHandler({ denyList: matchDenyList, limiter, onError: (_error, event) => errors.push(event) });
  const outcome = (ip: string): string => (handler.run(request(ip)) as HandleResult).outcome;
  return { limiter, handler, outcome, errors };
}

describe('the deny list step: when a list is compiled', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("compiles a limiter's first list at once, however long: it applies from the first request", () => {
    const { limiter, outcome } = setup();
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 5, 0, { match: '203.0.113.7' }) });
    expect(outcome('203.0.113.7')).toBe('denied');
    expect(outcome('203.0.113.8')).toBe('allowed');
  });

  it(`applies a list of up to ${COMPILE_AT_ONCE} entries that replaces another from the next request`, () => {
    const { limiter, outcome } = setup();
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 5, 0) });
    expect(outcome('203.0.113.7')).toBe('allowed');
    limiter.configure({ deny: [{ match: '203.0.113.7' }] });
    expect(outcome('203.0.113.7')).toBe('denied');
    limiter.configure({ deny: longList(COMPILE_AT_ONCE - 1, 90_000, { match: '203.0.113.8' }) });
    expect(outcome('203.0.113.8')).toBe('denied');
    expect(outcome('203.0.113.7')).toBe('allowed');
  });

  it('compiles a long list that replaces another a part per request, the replaced list applying until the last part', () => {
    vi.useFakeTimers(); // no timer turn runs unless the test moves the clock: only the requests compile
    const { limiter, outcome } = setup();
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 2, 0, { match: '198.51.100.1' }) });
    expect(outcome('198.51.100.1')).toBe('denied');
    const entries = COMPILE_AT_ONCE * 4;
    limiter.configure({ deny: longList(entries, 10, { match: '203.0.113.7' }) });
    // Each request compiles one part; the replaced list answers until the new one is whole.
    const parts = Math.ceil((entries + 1) / COMPILE_PART);
    let requests = 0;
    while (outcome('203.0.113.7') === 'allowed') {
      requests++;
      expect(outcome('198.51.100.1')).toBe('denied');
      requests++;
    }
    // One part per request: the request that compiled the last part is the first the new list answers.
    expect(requests).toBe(parts - 1);
    expect(outcome('198.51.100.1')).toBe('allowed');
    expect(outcome('203.0.113.8')).toBe('allowed');
  });

  it('finishes a long list between requests, on timer turns', async () => {
    const { limiter, outcome } = setup();
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 2, 0) });
    expect(outcome('203.0.113.7')).toBe('allowed');
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 6, 50, { match: '203.0.113.7' }) });
    expect(outcome('203.0.113.7')).toBe('allowed'); // a part or two, and a timer turn scheduled for the next
    // No request meanwhile: only timer turns can compile the remaining parts.
    const deadline = Date.now() + 10_000;
    while (readyMatcher(limiter, DEFAULT_IPV6_PREFIX) === undefined) {
      if (Date.now() > deadline) throw new Error('the long list was never compiled between requests');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(outcome('203.0.113.7')).toBe('denied');
  });

  it('with the previous list cleared, nothing applies while the next long list compiles', () => {
    vi.useFakeTimers();
    const { limiter, outcome } = setup();
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 2, 0, { match: '198.51.100.1' }) });
    expect(outcome('198.51.100.1')).toBe('denied');
    limiter.configure({ deny: [] });
    expect(outcome('198.51.100.1')).toBe('allowed');
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 4, 10, { match: '203.0.113.7' }) });
    // The cleared list is the one that applies meanwhile, not the one before it.
    expect(outcome('198.51.100.1')).toBe('allowed');
    let requests = 0;
    while (outcome('203.0.113.7') === 'allowed') expect(++requests).toBeLessThan(100);
    expect(outcome('198.51.100.1')).toBe('allowed');
  });

  it("compiles a long list of a handler's second limiter too, when the first limiter's list holds an address block", () => {
    vi.useFakeTimers();
    const first = memoryLimiter({ name: 'first', rules: fixedWindow({ limit: 1000, window: '10s' }) });
    first.configure({ deny: [{ match: '192.0.2.0/24' }] });
    const { limiter: second } = setup();
    const handler = createHandler({ denyList: matchDenyList, limiter: [first, second] });
    const outcome = (ip: string): string => (handler.run(request(ip)) as HandleResult).outcome;
    second.configure({ deny: longList(COMPILE_AT_ONCE * 2, 0) });
    expect(outcome('203.0.113.7')).toBe('allowed');
    second.configure({ deny: longList(COMPILE_AT_ONCE * 3, 10, { match: '203.0.113.7' }) });
    let requests = 0;
    while (outcome('203.0.113.7') === 'allowed') expect(++requests).toBeLessThan(100);
    expect(outcome('192.0.2.5')).toBe('denied');
  });

  it("reports a long list's malformed entries once, when it applies", () => {
    vi.useFakeTimers();
    const { limiter, outcome, errors } = setup();
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 2, 0) });
    outcome('203.0.113.9');
    limiter.configure({ deny: longList(COMPILE_AT_ONCE * 3, 10, { match: '203.0.113.999' }, { match: '203.0.113.7' }) });
    let requests = 0;
    while (outcome('203.0.113.7') === 'allowed') expect(++requests).toBeLessThan(100);
    for (let i = 0; i < 5; i++) outcome('203.0.113.9');
    const reports = errors.filter((e) => e.source === 'deny-list');
    expect(reports).toHaveLength(1);
  });
});
