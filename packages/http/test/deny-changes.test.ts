import { fixedWindow } from '@sluice/core';
import { denyChangesSince, liveDenyList, type LiveDenyLineage } from '@sluice/core/config';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMPILE_AT_ONCE, COMPILE_PART } from '../src/handler/deny/compile.js';
import { DenyListCompiler } from '../src/handler/deny/list.js';
import { createHandler, matchDenyList, type DenyEntry, type ErrorEvent, type HandleResult } from '../src/index.js';
import { memoryLimiter, request } from './support.js';

/** `count` entries, mixed as an operator's list grows: single IPv4 addresses, IPv4 /24s, IPv6 /56s, identities. */
function longList(count: number): DenyEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const kind = i % 4;
    if (kind === 0) return { match: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` };
    if (kind === 1) return { match: `${20 + (i >> 18)}.${(i >> 10) & 255}.${(i >> 2) & 255}.0/24` };
    if (kind === 2) return { match: `2001:db8:${(i & 0xffff).toString(16)}:${((i >> 16) & 255).toString(16)}00::/56` };
    return { match: `user:${i}` };
  });
}

function setup() {
  const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1_000_000, window: '10s' }) });
  const errors: [unknown, ErrorEvent<unknown>][] = [];
  const handler = createHandler({ denyList: matchDenyList, limiter, onError: (error, event) => errors.push([error, event]) });
  const outcome = (ip: string): string => (handler.run(request(ip)) as HandleResult).outcome;
  return { limiter, handler, outcome, errors };
}

/** Counts whole compiles (each ends in `finish`) and the entries they read. */
function countCompiles() {
  const finish = vi.spyOn(DenyListCompiler.prototype, 'finish');
  const step = vi.spyOn(DenyListCompiler.prototype, 'step');
  return {
    get compiles() {
      return finish.mock.calls.length;
    },
    get entriesRead() {
      return step.mock.calls.reduce((sum, [count]) => sum + count, 0);
    },
  };
}

describe('the deny list step: a change of some entries (the change() of a live deny list)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('applies a change to a 100,000-entry list on the next request without compiling the list again', () => {
    const { limiter, outcome } = setup();
    const counted = countCompiles();
    limiter.configure({ deny: liveDenyList(longList(100_000)) });
    expect(outcome('10.0.0.4')).toBe('denied');
    expect(counted.compiles).toBe(1);
    const readByTheCompile = counted.entriesRead;
    expect(readByTheCompile).toBeGreaterThanOrEqual(100_000);

    (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: '203.0.113.7', reason: 'scraper' }] });
    expect(outcome('203.0.113.7')).toBe('denied');
    (limiter.denyLineage as LiveDenyLineage).change({ remove: ['10.0.0.4', '203.0.113.7'] });
    expect(outcome('10.0.0.4')).toBe('allowed');
    expect(outcome('203.0.113.7')).toBe('allowed');
    expect(outcome('10.0.0.8')).toBe('denied');
    // Neither change compiled anything: no compiler finished, none read an entry.
    expect([counted.compiles, counted.entriesRead]).toEqual([1, readByTheCompile]);
  });

  it('applies changes to a list longer than one compiled at once on the very next request, with no part compile', () => {
    vi.useFakeTimers(); // no timer turn compiles anything unless the test moves the clock
    const { limiter, outcome } = setup();
    limiter.configure({ deny: liveDenyList(longList(COMPILE_AT_ONCE * 3)) });
    expect(outcome('203.0.113.7')).toBe('allowed');
    const counted = countCompiles();
    for (let i = 1; i <= 20; i++) {
      (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: `203.0.113.${i}` }], remove: [`203.0.113.${i - 1}`] });
      expect(outcome(`203.0.113.${i}`)).toBe('denied');
      expect(outcome(`203.0.113.${i - 1}`)).toBe('allowed');
    }
    expect([counted.compiles, counted.entriesRead]).toEqual([0, 0]);
  });

  it('catches up on several changes made between two requests, and compiles whole when the journal no longer reaches', () => {
    const { limiter, outcome } = setup();
    const counted = countCompiles();
    limiter.configure({ deny: liveDenyList(longList(100)) });
    expect(outcome('203.0.113.1')).toBe('allowed');
    for (let i = 1; i <= 5; i++) (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: `203.0.113.${i}` }] });
    expect([1, 5, 6].map((i) => outcome(`203.0.113.${i}`))).toEqual(['denied', 'denied', 'allowed']);
    expect(counted.compiles).toBe(1);
    // More changes than the journal keeps: the list (short enough to compile at once) is compiled whole, once.
    const lineage = limiter.denyLineage!;
    const seen = lineage.head;
    (limiter.denyLineage as LiveDenyLineage).change({ remove: ['203.0.113.1'] });
    for (let i = 0; denyChangesSince(lineage, seen, lineage.head) !== undefined; i++) {
      (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: `user:new-${i}` }] });
    }
    expect([1, 5].map((i) => outcome(`203.0.113.${i}`))).toEqual(['allowed', 'denied']);
    expect(counted.compiles).toBe(2);
  });

  it('keeps the list of a limiter that was given another limiter its array as it was, as that limiter changes its own', () => {
    const owner = memoryLimiter({ name: 'owner', rules: fixedWindow({ limit: 1000, window: '10s' }) });
    const taker = memoryLimiter({ name: 'taker', rules: fixedWindow({ limit: 1000, window: '10s' }) });
    owner.configure({ deny: liveDenyList([{ match: '203.0.113.1' }, { match: '203.0.113.2' }]) });
    taker.configure({ deny: liveDenyList(owner.deny) });
    expect(taker.deny).toBe(owner.deny);
    const outcome = (limiter: typeof owner) => {
      const handler = createHandler({ denyList: matchDenyList, limiter });
      return (ip: string) => (handler.run(request(ip)) as HandleResult).outcome;
    };
    const ofOwner = outcome(owner);
    const ofTaker = outcome(taker);
    expect([ofOwner('203.0.113.1'), ofTaker('203.0.113.1')]).toEqual(['denied', 'denied']);
    for (let i = 3; i < 6; i++) {
      (owner.denyLineage as LiveDenyLineage).change({ add: [{ match: `203.0.113.${i}` }], remove: ['203.0.113.1'] });
      expect([ofOwner(`203.0.113.${i}`), ofOwner('203.0.113.1')]).toEqual(['denied', 'allowed']);
      // The taker's array never changed: the owner's changes are not its.
      expect([ofTaker(`203.0.113.${i}`), ofTaker('203.0.113.1'), ofTaker('203.0.113.2')]).toEqual(['allowed', 'denied', 'denied']);
    }
  });

  it("reports a malformed entry a change adds once to each handler, and not the list's earlier problems again", () => {
    const first = setup();
    const seen: [unknown, ErrorEvent<unknown>][] = [];
    const second = createHandler({ denyList: matchDenyList, limiter: first.limiter, onError: (error, event) => seen.push([error, event]) });
    first.limiter.configure({ deny: liveDenyList([{ match: '10.0.0.0/33' }, { match: 'user:1' }]) });
    first.outcome('203.0.113.9');
    second.run(request('203.0.113.9'));
    expect([first.errors.length, seen.length]).toEqual([1, 1]);
    (first.limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: '203.0.113.999' }, { match: '203.0.113.7' }] });
    for (let i = 0; i < 3; i++) expect(first.outcome('203.0.113.7')).toBe('denied');
    for (let i = 0; i < 3; i++) expect((second.run(request('203.0.113.7')) as HandleResult).outcome).toBe('denied');
    for (const errors of [first.errors, seen]) {
      expect(errors).toHaveLength(2);
      expect(String(errors[1]![0])).toContain('deny list of "api": change.add "203.0.113.999": looks like an IP address');
      expect(errors[1]![1]).toMatchObject({ source: 'deny-list', limiterName: 'api' });
    }
  });

  it('carries a part compile on through changes that arrive faster than it, then takes them', () => {
    vi.useFakeTimers();
    const { limiter, outcome } = setup();
    limiter.configure({ deny: liveDenyList(longList(COMPILE_AT_ONCE)) });
    expect(outcome('198.51.100.1')).toBe('allowed');
    // A new list (a lineage of its own, so compiled whole, in parts), changed before every request.
    const entries = COMPILE_AT_ONCE * 4;
    limiter.configure({ deny: liveDenyList([...longList(entries), { match: '198.51.100.1' }]) });
    const counted = countCompiles();
    let requests = 0;
    while (outcome('198.51.100.1') === 'allowed') {
      (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: `203.0.113.${requests}` }] });
      expect(++requests).toBeLessThan(50);
    }
    expect(requests).toBe(Math.ceil((entries + 1) / COMPILE_PART) - 1);
    expect(counted.compiles).toBe(1);
    for (let i = 0; i < requests; i++) expect(outcome(`203.0.113.${i}`)).toBe('denied');
  });
});
