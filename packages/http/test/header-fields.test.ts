import { fixedWindow, slidingWindowLog, tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { createHandler, toResponse, type HandleResult, type HeaderStyle, type LegacyReset } from '../src/index.js';
import { nodeHeaderTarget, writeHeaders } from '../src/adapter/index.js';
import { HEADER_STYLES, capWindowParams, fieldMembers, sfString } from '../src/shared/header-fields.js';
import { fakeClock, memoryLimiter, request, written } from './support.js';

function headersAfter(count: number, styles: HeaderStyle | HeaderStyle[], legacyReset?: LegacyReset) {
  const clock = fakeClock();
  const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 2, window: '10s' }), clock: clock.read });
  const handler = createHandler({ limiter, headers: styles, legacyReset });
  let result: HandleResult | undefined;
  for (let i = 0; i < count; i++) result = now(handler.run(request()));
  return { clock, headers: written(result!.headers) };
}

/** A memory-store flow answers without a promise. */
function now(result: HandleResult | Promise<HandleResult>): HandleResult {
  if (result instanceof Promise) throw new Error('expected a synchronous answer');
  return result;
}

describe('header dialects', () => {
  it("draft-7: RateLimit as a dictionary, RateLimit-Policy as 'limit;w=window'", () => {
    expect(headersAfter(1, 'draft-7').headers).toEqual({ ratelimit: 'limit=2, remaining=1, reset=7', 'ratelimit-policy': '2;w=10' });
  });

  it('draft-6: three RateLimit-* fields and the policy', () => {
    expect(headersAfter(3, 'draft-6').headers).toEqual({
      'ratelimit-limit': '2',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '7',
      'ratelimit-policy': '2;w=10',
      'retry-after': '7',
      'content-type': 'application/problem+json',
    });
  });

  it('legacy X-RateLimit-*: Reset is the Unix second to retry at, or seconds from now by option', () => {
    const { clock, headers } = headersAfter(1, 'legacy');
    expect(headers).toEqual({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-used': '1',
      'x-ratelimit-reset': String((clock.now + 7_000) / 1000),
    });
    expect(headersAfter(1, 'legacy', 'delta-seconds').headers['x-ratelimit-reset']).toBe('7');
  });

  it('several dialects at once, and none at all', () => {
    expect(Object.keys(headersAfter(1, ['draft-11', 'legacy']).headers).sort()).toEqual([
      'ratelimit',
      'ratelimit-policy',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'x-ratelimit-used',
    ]);
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 2, window: '10s' }) });
    expect(written(now(createHandler({ limiter, headers: false }).run(request())).headers)).toEqual({});
  });
});

describe('two sluice middlewares on one request', () => {
  const clock = fakeClock();
  const outer = memoryLimiter({ name: 'global', rules: fixedWindow({ limit: 100, window: '1m' }), clock: clock.read });
  const inner = memoryLimiter({ name: 'login', rules: fixedWindow({ limit: 1, window: '10s' }), clock: clock.read });

  it('draft-11 items are appended, in order', () => {
    const a = now(createHandler({ limiter: outer }).run(request()));
    const b = now(createHandler({ limiter: inner }).run(request()));
    expect(written(b.headers, written(a.headers))).toEqual({
      'ratelimit-policy': '"global";q=100;w=60, "login";q=1;w=10',
      ratelimit: '"global";r=99;t=37, "login";r=0;t=7',
    });
  });

  it('single-policy dialects keep the stricter of the two', () => {
    const looser = { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '50', 'x-ratelimit-used': '50', 'x-ratelimit-reset': '1' };
    const b = createHandler({ limiter: memoryLimiter({ name: 'x', rules: fixedWindow({ limit: 5, window: '10s' }) }), headers: 'legacy' });
    const stricter = written(now(b.run(request())).headers, looser);
    expect(stricter['x-ratelimit-remaining']).toBe('4');
    expect(stricter['x-ratelimit-limit']).toBe('5');
    const tighter = { ...looser, 'x-ratelimit-remaining': '2' };
    expect(written(now(b.run(request())).headers, tighter)).toEqual(tighter);
  });

  // The bug: an app-wide compound limiter wrote its items (allowed, its day rule's hours in `t`) before a route's
  // login limiter refused, and the 429 carried that `t` next to a much shorter Retry-After.
  describe('a 429 after an earlier middleware let the request through: every t agrees with Retry-After', () => {
    const clockAt = fakeClock();
    const burst = fixedWindow({ limit: 10, window: '1m', id: 'burst' });
    const day = fixedWindow({ limit: 1000, window: '1d', id: 'day' });
    const api = createHandler({ limiter: memoryLimiter({ name: 'api', rules: [burst, day], clock: clockAt.read }) });
    const loginLimiter = memoryLimiter({ name: 'login', rules: fixedWindow({ limit: 1, window: '15m' }), clock: clockAt.read });
    const login = createHandler({ limiter: loginLimiter });
    const loginDraft6 = createHandler({ limiter: loginLimiter, headers: ['draft-6', 'legacy'], legacyReset: 'delta-seconds' });
    // The fake clock stands 37 s before a minute, 97 s before a quarter hour and 6397 s before midnight (UTC).
    const toQuarter = Math.ceil((900_000 - (clockAt.now % 900_000)) / 1000);
    const toMidnight = Math.ceil((86_400_000 - (clockAt.now % 86_400_000)) / 1000);
    const seconds = (headers: Record<string, string>) => fieldMembers(headers.ratelimit!).map((item) => Number(item.params.get('t')));

    it('draft-11: the earlier items are capped at the refusal Retry-After, as the refusing limiter items are', () => {
      now(login.run(request('198.51.100.20')));
      const allowed = now(api.run(request('198.51.100.20')));
      const refused = now(login.run(request('198.51.100.20')));
      expect(refused.status).toBe(429);
      const headers = written(refused.headers, written(allowed.headers));
      expect(headers['retry-after']).toBe(String(toQuarter));
      expect(headers.ratelimit).toBe(`"api/burst";r=9;t=37, "api/day";r=999;t=${toQuarter}, "login";r=0;t=${toQuarter}`);
      for (const t of seconds(headers)) expect(t).toBeLessThanOrEqual(Number(headers['retry-after']));
      // The allowed response alone still reports each rule's own effective window.
      expect(written(allowed.headers).ratelimit).toBe(`"api/burst";r=9;t=37, "api/day";r=999;t=${toMidnight}`);
    });

    it('the other order (the allowed fields written onto the refusal, as with Next) caps them too', () => {
      now(login.run(request('198.51.100.21')));
      const allowed = now(api.run(request('198.51.100.21')));
      const refused = now(login.run(request('198.51.100.21')));
      const headers = written(allowed.headers, written(refused.headers));
      expect(headers.ratelimit).toBe(`"login";r=0;t=${toQuarter}, "api/burst";r=9;t=37, "api/day";r=999;t=${toQuarter}`);
    });

    it('draft-6 and legacy: the refusing limiter speaks, even when the earlier one had less left', () => {
      // The earlier middleware reports the day rule with nothing left (a stricter group by its remaining count).
      const earlier = {
        'ratelimit-limit': '1000',
        'ratelimit-remaining': '0',
        'ratelimit-reset': String(toMidnight),
        'ratelimit-policy': '10;w=60, 1000;w=86400',
        'x-ratelimit-limit': '1000',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-used': '1000',
        'x-ratelimit-reset': String(toMidnight),
      };
      now(loginDraft6.run(request('198.51.100.22')));
      const refused = now(loginDraft6.run(request('198.51.100.22')));
      const headers = written(refused.headers, earlier);
      expect(headers['retry-after']).toBe(String(toQuarter));
      expect(headers['ratelimit-reset']).toBe(String(toQuarter));
      expect(headers['ratelimit-limit']).toBe('1');
      expect(headers['x-ratelimit-reset']).toBe(String(toQuarter));
      expect(headers['x-ratelimit-limit']).toBe('1');
    });

    it('draft-6: an allowed limiter with less left, written after the refusal, does not replace it', () => {
      // A refusal can have room left (a cost of 3 with 2 left); the allowed limiter has none, but the 429 is not its.
      const bulk = createHandler({
        limiter: memoryLimiter({ name: 'bulk', rules: fixedWindow({ limit: 5, window: '15m' }), clock: clockAt.read }),
        cost: 3,
        headers: 'draft-6',
      });
      const daily = createHandler({
        limiter: memoryLimiter({ name: 'daily', rules: fixedWindow({ limit: 1, window: '1d' }), clock: clockAt.read }),
        headers: 'draft-6',
      });
      now(bulk.run(request('198.51.100.23')));
      const refused = written(now(bulk.run(request('198.51.100.23'))).headers);
      expect(refused['ratelimit-remaining']).toBe('2');
      const allowed = now(daily.run(request('198.51.100.23')));
      expect(written(allowed.headers)['ratelimit-reset']).toBe(String(toMidnight));
      expect(written(allowed.headers, refused)).toEqual(refused);
    });
  });

  it('Retry-After keeps the longer wait', () => {
    const refusal = now(createHandler({ limiter: inner }).run(request('198.51.100.9')));
    const again = now(createHandler({ limiter: inner }).run(request('198.51.100.9')));
    expect(written(refusal.headers)['retry-after']).toBeUndefined();
    expect(written(again.headers, { 'retry-after': '30' })['retry-after']).toBe('30');
    expect(written(again.headers, { 'retry-after': '2' })['retry-after']).toBe('7');
  });
});

describe('policy items', () => {
  it('two handlers whose limiters share a policy name each report their own quota, request after request', () => {
    const clock = fakeClock();
    const small = createHandler({
      limiter: memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 5, window: '10s' }), clock: clock.read }),
    });
    const large = createHandler({
      limiter: memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 7, window: '1m' }), clock: clock.read }),
    });
    for (let i = 0; i < 3; i++) {
      expect(written(now(small.run(request())).headers)['ratelimit-policy']).toBe('"api";q=5;w=10');
      expect(written(now(large.run(request())).headers)['ratelimit-policy']).toBe('"api";q=7;w=60');
    }
  });
});

describe('web helpers', () => {
  it('toResponse builds the refusal as a web Response', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler({ limiter });
    await handler.handle(request());
    const response = toResponse(await handler.handle(request()));
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(response.headers.get('ratelimit')).toBe('"api";r=0;t=7');
    expect((await response.json()).status).toBe(429);
  });

  it('sfString escapes quotes and backslashes', () => {
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"');
  });

  it('nodeHeaderTarget reads Node header values (a number, a list) as text and merges onto them', () => {
    // Node's getHeader answers whatever was set: a number, a string or a list of strings.
    const held = new Map<string, unknown>([
      ['ratelimit', ['"global";r=9;t=60']],
      ['retry-after', 30],
    ]);
    const target = nodeHeaderTarget(
      (name) => held.get(name.toLowerCase()),
      (name, value) => void held.set(name.toLowerCase(), value),
    );
    writeHeaders(
      [
        { name: 'RateLimit', value: '"login";r=0;t=60', merge: 'append' },
        { name: 'Retry-After', value: '12', merge: 'max' },
      ],
      target,
    );
    // The longer Retry-After already there stays, and every t on the response is capped at it.
    expect(held.get('ratelimit')).toBe('"global";r=9;t=30, "login";r=0;t=30');
    expect(held.get('retry-after')).toBe(30);
  });
});

describe('capWindowParams', () => {
  it('lowers only the integer t parameters above the cap, leaving the rest of the text as it was', () => {
    expect(capWindowParams('"a";r=0;t=900, "b";r=5;t=12, "c";r=1; t=4000', 60)).toBe('"a";r=0;t=60, "b";r=5;t=12, "c";r=1; t=60');
    const untouched = '"a";r=0;t=5, "b";q=9;w=86400';
    expect(capWindowParams(untouched, 60)).toBe(untouched);
  });

  it('does not take a ;t= inside a quoted name (escapes included), or another parameter ending in t, for t', () => {
    expect(capWindowParams('"x;t=999";r=1;t=999, "y";tt=999;t=70', 60)).toBe('"x;t=999";r=1;t=60, "y";tt=999;t=60');
    expect(capWindowParams('"q\\";t=999 ";r=0;t=90', 60)).toBe('"q\\";t=999 ";r=0;t=60');
    expect(capWindowParams('"a";t=2.5;t=7x', 1)).toBe('"a";t=2.5;t=7x');
  });
});

describe('fieldMembers: the fields read back, as a third party sends them', () => {
  it('List items with their parameters, Dictionary members with their key, names lowercased', () => {
    expect(fieldMembers('"api";r=0;t=5, 10;W=1')).toEqual([
      {
        value: '"api"',
        params: new Map([
          ['r', '0'],
          ['t', '5'],
        ]),
      },
      { value: '10', params: new Map([['w', '1']]) },
    ]);
    expect(fieldMembers('Limit=10, remaining=0')).toEqual([
      { key: 'limit', value: '10', params: new Map() },
      { key: 'remaining', value: '0', params: new Map() },
    ]);
  });

  it('what this package writes reads back as it was meant', () => {
    expect(fieldMembers(`${sfString('a=b')};q=5;w=60`)).toEqual([
      {
        value: '"a=b"',
        params: new Map([
          ['q', '5'],
          ['w', '60'],
        ]),
      },
    ]);
  });
});

describe('parameters this package never sends', () => {
  it('no field carries qu (quota unit) or pk (partition key): every dialect, allowed and refused, any cost, one rule or compound', () => {
    const ruleSets = [
      fixedWindow({ limit: 4, window: '10s' }),
      tokenBucket({ capacity: 4, refillRate: 1, interval: '5s' }),
      [fixedWindow({ limit: 6, window: '1s' }), slidingWindowLog({ limit: 5, window: '1m' })],
    ];
    let fieldsRead = 0;
    // The drafts define the same fields differently: each dialect is read alone, legacy beside each.
    const dialects: HeaderStyle[][] = [
      ['draft-11', 'legacy'],
      ['draft-7', 'legacy'],
      ['draft-6', 'legacy'],
    ];
    expect(new Set(dialects.flat())).toEqual(new Set(HEADER_STYLES));
    for (const headers of dialects)
      for (const rules of ruleSets) {
        for (const cost of [1, 3]) {
          const clock = fakeClock();
          const limiter = memoryLimiter({ name: 'api', rules, clock: clock.read });
          const handler = createHandler({ limiter, headers, cost });
          const outcomes = new Set<number>();
          for (let i = 0; i < 6; i++) {
            const result = now(handler.run(request()));
            outcomes.add(result.status);
            for (const [name, value] of Object.entries(written(result.headers))) {
              if (!name.startsWith('ratelimit') && !name.startsWith('x-ratelimit')) continue;
              for (const member of fieldMembers(value)) {
                fieldsRead++;
                expect([...member.params.keys()], `${name}: ${value}`).not.toContain('qu');
                expect([...member.params.keys()], `${name}: ${value}`).not.toContain('pk');
                expect(member.key, `${name}: ${value}`).not.toBe('qu');
                expect(member.key, `${name}: ${value}`).not.toBe('pk');
              }
            }
          }
          expect(outcomes.size, 'both an allowed and a refused response were read').toBe(2);
        }
      }
    expect(fieldsRead).toBeGreaterThan(100);
  });
});
