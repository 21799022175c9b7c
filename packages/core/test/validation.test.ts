/**
 * Bad input is refused when the limiter (or rule) is built, or at the call for per-request values, always with a
 * SluiceError whose code is stable and whose message names the field and what is accepted.
 */
import { describe, expect, test } from 'vitest';
import {
  SluiceError,
  createLimiter,
  fixedWindow,
  gcra,
  isSluiceError,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type SluiceErrorCode,
} from '../src/index.js';
import { MapStore } from './support/map-store.js';

function thrown(run: () => unknown): SluiceError {
  try {
    run();
  } catch (error) {
    expect(isSluiceError(error), `expected a SluiceError, got ${String(error)}`).toBe(true);
    expect(error).toBeInstanceOf(SluiceError);
    return error as SluiceError;
  }
  throw new Error('expected the call to throw');
}

function expectError(run: () => unknown, code: SluiceErrorCode, ...mentions: string[]): void {
  const error = thrown(run);
  expect(error.code).toBe(code);
  expect(error.message.startsWith('[sluice] ')).toBe(true);
  for (const text of mentions) expect(error.message).toContain(text);
}

async function expectRejection(run: () => Promise<unknown>, code: SluiceErrorCode, ...mentions: string[]): Promise<void> {
  const error: unknown = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isSluiceError(error)).toBe(true);
  expect((error as SluiceError).code).toBe(code);
  for (const text of mentions) expect((error as SluiceError).message).toContain(text);
}

type Factory = (options: Record<string, unknown>) => unknown;
const as = (factory: unknown) => factory as Factory;

/** Every factory, a valid set of options, and its numeric fields that must be positive integers. */
const factories: Array<{ name: string; make: Factory; valid: Record<string, unknown>; integers: string[]; durations: string[] }> = [
  { name: 'fixedWindow', make: as(fixedWindow), valid: { limit: 5, window: '1s' }, integers: ['limit'], durations: ['window'] },
  { name: 'slidingWindowLog', make: as(slidingWindowLog), valid: { limit: 5, window: '1s' }, integers: ['limit'], durations: ['window'] },
  {
    name: 'slidingWindowCounter',
    make: as(slidingWindowCounter),
    valid: { limit: 5, window: '1s' },
    integers: ['limit'],
    durations: ['window'],
  },
  {
    name: 'tokenBucket',
    make: as(tokenBucket),
    valid: { capacity: 5, refillRate: 1 },
    integers: ['capacity', 'refillRate'],
    durations: ['interval'],
  },
  {
    name: 'leakyBucket',
    make: as(leakyBucket),
    valid: { capacity: 5, leakRate: 1 },
    integers: ['capacity', 'leakRate'],
    durations: ['interval'],
  },
  { name: 'gcra', make: as(gcra), valid: { limit: 5, period: '1s' }, integers: ['limit', 'burst'], durations: ['period'] },
];

const notPositiveIntegers: unknown[] = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  0,
  -1,
  -0.5,
  1.5,
  '5',
  null,
  2 ** 53,
];
const badDurations: unknown[] = [
  0,
  -1,
  0.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  '0ms',
  '0.5ms',
  '0s',
  '-1s',
  '',
  ' ',
  '1 minute',
  '5x',
  'ms',
  '1e3ms',
  '1.5.5s',
  '1h 30m',
  '30m1h',
  true,
  {},
];

describe('rule factories', () => {
  for (const f of factories) {
    describe(f.name, () => {
      test('valid options build a rule', () => {
        expect(f.make(f.valid)).toMatchObject({ id: expect.any(String), limit: 5 });
      });

      for (const field of f.integers) {
        test.each(notPositiveIntegers.map((v) => [String(v), v]))(
          `${field} = %s is INVALID_OPTION naming ${f.name}: ${field}`,
          (_label, value) => {
            expectError(() => f.make({ ...f.valid, [field]: value }), 'INVALID_OPTION', `${f.name}: ${field}`, 'positive integer');
          },
        );
      }

      for (const field of f.durations) {
        test.each(badDurations.map((v) => [JSON.stringify(v) ?? String(v), v]))(
          `${field} = %s is INVALID_OPTION naming ${f.name}: ${field}`,
          (_label, value) => {
            expectError(() => f.make({ ...f.valid, [field]: value }), 'INVALID_OPTION', `${f.name}: ${field}`);
          },
        );
      }

      test('a missing required option is named', () => {
        for (const field of Object.keys(f.valid)) {
          const { [field]: _dropped, ...rest } = f.valid;
          expectError(() => f.make(rest), 'INVALID_OPTION', `${f.name}: ${field}`);
        }
      });

      test('an unknown option (a typo) is UNKNOWN_OPTION naming it and the accepted ones', () => {
        expectError(() => f.make({ ...f.valid, windw: '1s' }), 'UNKNOWN_OPTION', f.name, '"windw"', 'accepted options are');
      });

      test('options that are not an object are refused', () => {
        for (const value of [undefined, null, 5, 'x', []])
          expectError(() => f.make(value as never), 'INVALID_OPTION', f.name, 'options must be an object');
      });

      test.each(['', 'has space', 'a{b}', 'x'.repeat(65), 'ü'])('id %j is INVALID_OPTION naming the id', (id) => {
        expectError(() => f.make({ ...f.valid, id }), 'INVALID_OPTION', `${f.name}: id`);
      });
    });
  }

  test('window messages say which durations are accepted', () => {
    expectError(() => fixedWindow({ limit: 1, window: '1 minute' as never }), 'INVALID_OPTION', 'fixedWindow: window', "'250ms'", "'1d'");
    expectError(() => fixedWindow({ limit: 1, window: 0.5 }), 'INVALID_OPTION', 'fixedWindow: window', 'at least 1');
  });

  test('choices are checked: stagger and refill', () => {
    expectError(
      () => fixedWindow({ limit: 1, window: '1s', stagger: 'yes' as never }),
      'INVALID_OPTION',
      'fixedWindow: stagger',
      'true or false',
    );
    expectError(
      () => tokenBucket({ capacity: 1, refillRate: 1, refill: 'burst' as never }),
      'INVALID_OPTION',
      'tokenBucket: refill',
      "'smooth' or 'interval'",
    );
  });

  test('parameters whose time arithmetic would pass 2^53 are refused up front', () => {
    expectError(
      () => tokenBucket({ capacity: 2 ** 40, refillRate: 1, interval: '1d' }),
      'INVALID_OPTION',
      'tokenBucket: capacity × interval',
      '2^53',
    );
    expectError(() => gcra({ limit: 2 ** 40, period: '1d' }), 'INVALID_OPTION', 'gcra:', '2^53');
    expectError(
      () => leakyBucket({ capacity: 2 ** 40, leakRate: 1, interval: '1d' }),
      'INVALID_OPTION',
      'leakyBucket: capacity × interval',
    );
    expectError(() => slidingWindowCounter({ limit: 2 ** 40, window: '1d' }), 'INVALID_OPTION', 'slidingWindowCounter: limit × window');
  });
});

describe('createLimiter', () => {
  const rules = fixedWindow({ limit: 1, window: '1s' });
  const store = new MapStore();
  const make = (options: Record<string, unknown>) => createLimiter({ store, rules, ...options } as never);

  test('unknown options are UNKNOWN_OPTION naming the option', () => {
    expectError(() => make({ clok: () => 0 }), 'UNKNOWN_OPTION', 'createLimiter', '"clok"');
  });

  test('store, name, prefix, clock, quotaFor and mode are checked and named', () => {
    expectError(() => createLimiter({ rules } as never), 'INVALID_OPTION', 'createLimiter: store');
    expectError(() => make({ store: { limit: 1 } }), 'INVALID_OPTION', 'createLimiter: store');
    for (const name of ['', 'a b', 'x:y', 'a{b}', 'n'.repeat(65), 7])
      expectError(() => make({ name }), 'INVALID_OPTION', 'createLimiter: name');
    for (const prefix of ['', 'p:q', '{p}']) expectError(() => make({ prefix }), 'INVALID_OPTION', 'createLimiter: prefix');
    expectError(() => make({ clock: 5 }), 'INVALID_OPTION', 'createLimiter: clock');
    expectError(() => make({ quotaFor: {} }), 'INVALID_OPTION', 'createLimiter: quotaFor');
    expectError(() => make({ mode: 'on' }), 'INVALID_OPTION', 'mode', "'enforce', 'shadow' or 'off'");
    expectError(() => createLimiter(null as never), 'INVALID_OPTION', 'createLimiter');
  });

  test('rules: at least one, made by a factory, ids unique', () => {
    expectError(() => make({ rules: [] }), 'INVALID_OPTION', 'rules', 'at least one rule');
    expectError(() => make({ rules: undefined }), 'INVALID_OPTION', 'rules');
    expectError(() => make({ rules: [{ algorithm: 'magic' }] }), 'INVALID_OPTION', 'rules', 'fixedWindow()');
    // Both default to the id 'fw:1000'.
    expectError(
      () => make({ rules: [fixedWindow({ limit: 1, window: '1s' }), fixedWindow({ limit: 9, window: 1000 })] }),
      'INVALID_OPTION',
      'rules',
      '"fw:1000"',
      'explicit id',
    );
    expectError(
      () => make({ rules: [tokenBucket({ capacity: 1, refillRate: 1, id: 'x' }), gcra({ limit: 1, period: '1s', id: 'x' })] }),
      'INVALID_OPTION',
      '"x"',
    );
  });

  test('configure() validates like the constructor, naming the field', () => {
    const limiter = make({});
    expectError(() => limiter.configure({ rule: rules } as never), 'UNKNOWN_OPTION', 'configure', '"rule"');
    expectError(() => limiter.configure({ rules: [rules, rules] }), 'INVALID_OPTION', 'rules', 'share the id');
    expectError(() => limiter.configure({ mode: 'silent' as never }), 'INVALID_OPTION', 'mode');
  });

  test('duplicate ids returned by quotaFor(identity) are refused at the call', () => {
    const limiter = createLimiter({ store, rules, quotaFor: () => [rules, rules] });
    expectError(() => limiter.limitSync('u'), 'INVALID_OPTION', 'quotaFor(identity)', 'share the id');
  });
});

describe('per-call values', () => {
  const limiter = createLimiter({ store: new MapStore(), rules: fixedWindow({ limit: 5, window: '1s' }) });

  test.each([
    ['empty string', ''],
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['an object', {}],
  ])('identity: %s is INVALID_IDENTITY naming identity, on every method', async (_label, identity) => {
    const id = identity as string;
    expectError(() => limiter.limitSync(id), 'INVALID_IDENTITY', 'identity', 'non-empty string');
    expectError(() => limiter.peekSync(id), 'INVALID_IDENTITY', 'identity');
    expectError(() => limiter.refundSync(id), 'INVALID_IDENTITY', 'identity');
    await expectRejection(() => limiter.limit(id), 'INVALID_IDENTITY', 'identity');
    await expectRejection(() => limiter.peek(id), 'INVALID_IDENTITY', 'identity');
    await expectRejection(() => limiter.refund(id), 'INVALID_IDENTITY', 'identity');
    await expectRejection(() => limiter.reset(id), 'INVALID_IDENTITY', 'identity');
  });

  test.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, -0.0001, 2 ** 53, '2', null])(
    'cost %s is INVALID_COST naming cost',
    async (cost) => {
      const options = { cost: cost as number };
      expectError(() => limiter.limitSync('u', options), 'INVALID_COST', 'cost', 'non-negative integer');
      expectError(() => limiter.peekSync('u', options), 'INVALID_COST', 'cost');
      expectError(() => limiter.refundSync('u', options), 'INVALID_COST', 'cost');
      await expectRejection(() => limiter.limit('u', options), 'INVALID_COST', 'cost');
    },
  );

  test('valid costs, including 0 and large integers, are accepted', () => {
    for (const cost of [0, 1, 5, 2 ** 52]) expect(() => limiter.peekSync('u', { cost })).not.toThrow();
  });
});
