import { SluiceError, type Duration, type Store } from '@sluice/core';
import { describeValue, optionNames, rejectUnknownOptions, timerDuration } from '@sluice/core/internal';

/** What `inspectKeys` is given: the store, the test's unique key prefix, and the suite's current time. */
export interface InspectKeysContext<S extends Store = Store> {
  readonly store: S;
  /** Every key the test's limiters write starts with `${prefix}:`. */
  readonly prefix: string;
  /** The suite's notion of now, epoch ms: the fake clock for client-clock stores, `Date.now()` for store-clock ones. */
  readonly now: number;
}

export interface StoreConformanceOptions<S extends Store = Store> {
  /** Names the top-level `describe` block, e.g. `'memory'` or `'redis (cluster)'`. */
  name: string;
  /**
   * Makes a store to test. May be async. Called before every test (or once, with `storeScope: 'suite'`); each test
   * also gets a unique key prefix, so a store over a shared server never sees another test's keys.
   */
  createStore: () => S | Promise<S>;
  /**
   * Whose clock decides. `'client'`: the store uses `request.now`; the suite drives a fake clock through the
   * limiter's `clock` option and runs every time-driven vector. `'store'`: the store reads its own clock (Redis
   * `TIME`); the suite runs the time-independent vectors, checks every answer against the reference model at the
   * time the store reported, and waits a few hundred ms of real time for expiry.
   */
  clock: 'client' | 'store';
  /** What the store claims; the suite checks the claim against `store.capabilities` and tests what it implies. */
  capabilities?: {
    /** Every method answers without a promise, so limiters over it get `limitSync`. @default false */
    synchronous?: boolean;
    /**
     * The optional operations `limit` runs (`take`, `reserve`), as announced in `store.capabilities.operations`. Their
     * vectors run for each one listed and are reported as skipped for the others, which must refuse them.
     * @default []
     */
    operations?: ReadonlyArray<'take' | 'reserve'>;
    /**
     * The store runs concurrency leases (`store.lease()`, announced as `lease` in `capabilities.operations`): their
     * vectors run, or are reported as skipped and the store must be refused by `createConcurrencyLimiter`.
     * @default false
     */
    leases?: boolean;
  };
  /** Releases a store after use. @default store => store.close?.() */
  teardown?: (store: S) => void | Promise<void>;
  /** `'test'`: a fresh store per test. `'suite'`: one store for the whole suite (unique prefixes still isolate tests). @default 'test' */
  storeScope?: 'test' | 'suite';
  /**
   * Lists the keys the store still holds under `${prefix}:`, leaving out (or first dropping) what has expired by
   * `now`. When given, the suite also proves that peeks and denials write nothing, that state is gone once its ttl
   * has passed, that reset removes it, and that long identities give bounded keys.
   * Client-clock stores must expire by the `now` given (the fake clock); stores that expire by real time (Redis
   * PEXPIRE) and run with `clock: 'client'` say so with `keyExpiry: 'store'`.
   */
  inspectKeys?: (context: InspectKeysContext<S>) => readonly string[] | Promise<readonly string[]>;
  /**
   * Whose clock removes the keys `inspectKeys` lists. A client-clock store whose keys expire by its own clock (Redis
   * `PX` under `clock: 'client'`) cannot drop state at the fake clock's resetAt: with `'store'` the suite checks instead
   * that moving the fake clock past resetAt leaves the state in place, in a test whose title says so, and leaves the
   * expiry itself to a `clock: 'store'` run of the same store. Only for `clock: 'client'`.
   * @default the `clock` option
   */
  keyExpiry?: 'client' | 'store';
  /**
   * Every test of the suite must run: a run that would report one as skipped (no `inspectKeys`, `take`, `reserve`
   * or leases not announced) is refused when it is registered, naming what is missing. First-party stores set it.
   * @default false
   */
  requireAll?: boolean;
  /** Start of every test's unique prefix; letters, digits, '_', '.', '-'. @default 'conformance' */
  keyPrefix?: string;
  /** Deadline the suite's limiters give each store call (ms or a string like `'5s'`); a miss fails the test with the store's error. @default '5s' */
  timeout?: Duration;
}

const KNOWN = optionNames<StoreConformanceOptions>({
  name: true,
  createStore: true,
  clock: true,
  capabilities: true,
  teardown: true,
  storeScope: true,
  inspectKeys: true,
  keyExpiry: true,
  requireAll: true,
  keyPrefix: true,
  timeout: true,
});
/** What the limiters' own `timeout` accepts. */

/** Validated options with defaults filled in. */
export interface ResolvedOptions<S extends Store> {
  readonly name: string;
  readonly createStore: () => S | Promise<S>;
  readonly clock: 'client' | 'store';
  readonly synchronous: boolean;
  readonly operations: ReadonlyArray<'take' | 'reserve'>;
  readonly leases: boolean;
  readonly teardown: (store: S) => void | Promise<void>;
  readonly storeScope: 'test' | 'suite';
  readonly inspectKeys: StoreConformanceOptions<S>['inspectKeys'];
  readonly keyExpiry: 'client' | 'store';
  readonly keyPrefix: string;
  /** The store-call deadline, in ms. */
  readonly timeoutMs: number;
}

function fail(message: string): never {
  throw new SluiceError('INVALID_OPTION', `describeStoreConformance: ${message}`);
}

export function resolveOptions<S extends Store>(options: StoreConformanceOptions<S>): ResolvedOptions<S> {
  if (typeof options !== 'object' || options === null) fail(`options must be an object, got ${describeValue(options)}`);
  rejectUnknownOptions(options, KNOWN, 'describeStoreConformance');
  if (typeof options.name !== 'string' || options.name.length === 0)
    fail(`name must be a non-empty string, got ${describeValue(options.name)}`);
  if (typeof options.createStore !== 'function')
    fail(`createStore must be a function returning a store (or a promise of one), got ${describeValue(options.createStore)}`);
  if (options.clock !== 'client' && options.clock !== 'store')
    fail(`clock must be 'client' or 'store', got ${describeValue(options.clock)}`);
  const synchronous = options.capabilities?.synchronous ?? false;
  if (typeof synchronous !== 'boolean') fail(`capabilities.synchronous must be true or false, got ${describeValue(synchronous)}`);
  const operations = options.capabilities?.operations ?? [];
  if (!Array.isArray(operations) || operations.some((m) => m !== 'take' && m !== 'reserve')) {
    fail(`capabilities.operations must be an array of 'take' and 'reserve', got ${describeValue(operations)}`);
  }
  const leases = options.capabilities?.leases ?? false;
  if (typeof leases !== 'boolean') fail(`capabilities.leases must be true or false, got ${describeValue(leases)}`);
  if (options.teardown !== undefined && typeof options.teardown !== 'function')
    fail(`teardown must be a function, got ${describeValue(options.teardown)}`);
  const storeScope = options.storeScope ?? 'test';
  if (storeScope !== 'test' && storeScope !== 'suite') fail(`storeScope must be 'test' or 'suite', got ${describeValue(storeScope)}`);
  if (options.inspectKeys !== undefined && typeof options.inspectKeys !== 'function')
    fail(`inspectKeys must be a function, got ${describeValue(options.inspectKeys)}`);
  const keyExpiry = options.keyExpiry ?? options.clock;
  if (keyExpiry !== 'client' && keyExpiry !== 'store') fail(`keyExpiry must be 'client' or 'store', got ${describeValue(keyExpiry)}`);
  if (keyExpiry === 'client' && options.clock === 'store') {
    fail("keyExpiry 'client' needs clock: 'client' (a store-clock store's keys expire by the store's clock)");
  }
  const requireAll = options.requireAll ?? false;
  if (typeof requireAll !== 'boolean') fail(`requireAll must be true or false, got ${describeValue(requireAll)}`);
  if (requireAll) {
    const missing = [
      ...(options.inspectKeys === undefined ? ["inspectKeys (the tests that read the store's keys)"] : []),
      ...(['take', 'reserve'] as const)
        .filter((operation) => !operations.includes(operation))
        .map((operation) => `capabilities.operations '${operation}' (its vectors)`),
      ...(leases ? [] : ['capabilities.leases (the lease vectors)']),
    ];
    if (missing.length > 0) fail(`requireAll is true, so no test may be skipped, but the run lacks ${missing.join(', ')}`);
  }
  const keyPrefix = options.keyPrefix ?? 'conformance';
  if (typeof keyPrefix !== 'string' || !/^[A-Za-z0-9_.-]{1,40}$/.test(keyPrefix)) {
    fail(`keyPrefix must be 1 to 40 characters of letters, digits, '_', '.' or '-', got ${describeValue(keyPrefix)}`);
  }
  const timeoutMs = timerDuration(options.timeout ?? 5000, 'describeStoreConformance: timeout');
  return {
    name: options.name,
    createStore: options.createStore,
    clock: options.clock,
    synchronous,
    operations,
    leases,
    teardown: options.teardown ?? ((store: S) => store.close?.()),
    storeScope,
    inspectKeys: options.inspectKeys,
    keyExpiry,
    keyPrefix,
    timeoutMs,
  };
}
