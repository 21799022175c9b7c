import { createLimiter, type Limiter, type Rule, type Store, type SyncLimiter } from '@sluice/core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { ResolvedOptions } from './options.js';
import { ReferenceStore } from './reference-store.js';
import { FAKE_EPOCH, clockOffset } from './time.js';
import { TrackedLimiter, type Api } from './tracked-limiter.js';

export interface LimiterConfig {
  rules: Rule | readonly Rule[];
  /** @default 'default' */
  name?: string;
  /** @default the test's unique prefix */
  prefix?: string;
}

const RUN = Math.random().toString(36).slice(2, 8).padEnd(6, '0');
let sequence = 0;

/** One test's world: the store, a unique key prefix, the fake clock (client clock) and the reference model. */
export class TestContext<S extends Store = Store> {
  readonly model = new ReferenceStore();
  private fakeNow = FAKE_EPOCH;
  /** Time of the latest decision, which is where the model replays the next one. */
  modelNow = FAKE_EPOCH;

  constructor(
    readonly store: S,
    readonly options: ResolvedOptions<S>,
    readonly prefix: string,
  ) {}

  get clientClock(): boolean {
    return this.options.clock === 'client';
  }

  /** Epoch ms as the suite sees it: the fake clock, or real time for store-clock stores. */
  get now(): number {
    return this.clientClock ? this.fakeNow : Date.now();
  }

  /** Moves the fake clock to FAKE_EPOCH + offset (`'1:18'` or ms). Client clock only. */
  at(offset: string | number): void {
    if (!this.clientClock) throw new Error('conformance: at() drives the fake clock, which store-clock stores ignore');
    this.fakeNow = FAKE_EPOCH + (typeof offset === 'number' ? offset : clockOffset(offset));
  }

  /** Moves the fake clock to an absolute epoch ms. Client clock only. */
  setNow(epochMs: number): void {
    if (!this.clientClock) throw new Error('conformance: setNow() drives the fake clock, which store-clock stores ignore');
    this.fakeNow = epochMs;
  }

  /** A limiter on the store under test, checked against the model on every call. */
  limiter(config: LimiterConfig, api: Api = 'async'): TrackedLimiter {
    const model = createLimiter({
      store: this.model,
      rules: config.rules,
      name: config.name ?? 'default',
      prefix: config.prefix ?? this.prefix,
      clock: () => this.modelNow,
      circuitBreaker: false,
    });
    return new TrackedLimiter(this as unknown as TestContext<Store>, this.rawLimiter(config), model as SyncLimiter, api);
  }

  /** A limiter on the store under test without the model (for concurrent calls, whose order is the store's). */
  rawLimiter(config: LimiterConfig): Limiter {
    return createLimiter({
      store: this.store as Store,
      rules: config.rules,
      name: config.name ?? 'default',
      prefix: config.prefix ?? this.prefix,
      clock: this.clientClock ? () => this.fakeNow : Date.now,
      circuitBreaker: false,
      onStoreError: 'deny',
      timeout: this.options.timeoutMs,
    });
  }

  /**
   * Keys the store holds under this test's prefix. Only tests registered with `itWithKeys` call it: they are
   * skipped, and reported as skipped, when the adopter gave no `inspectKeys`.
   */
  async keys(): Promise<readonly string[]> {
    const inspect = this.options.inspectKeys;
    if (inspect === undefined) throw new Error('conformance: keys() needs the inspectKeys option; register the test with itWithKeys');
    const keys = await inspect({ store: this.store, prefix: this.prefix, now: this.now });
    for (const key of keys) {
      expect(key.startsWith(`${this.prefix}:`), `inspectKeys returned ${JSON.stringify(key)}, outside the prefix ${this.prefix}:`).toBe(
        true,
      );
    }
    return keys;
  }

  /** Keys that belong to one identity of one limiter (`prefix:name:{identityKey}` and anything below it). */
  async keysOf(identityKey: string, name = 'default'): Promise<readonly string[]> {
    const base = `${this.prefix}:${name}:{${identityKey}}`;
    const keys = await this.keys();
    return keys.filter((key) => key === base || key.startsWith(`${base}:`));
  }

  /**
   * Checks the time a decision reports (the fake clock exactly, or a store clock that did not run backwards since
   * `previous`, the same limiter's last decision) and makes it the time the model replays at.
   */
  observe(now: number, previous: number, what: string): void {
    if (this.clientClock) {
      expect(now, `${what}: a client-clock store must decide at request.now`).toBe(this.fakeNow);
    } else {
      expect(Number.isSafeInteger(now), `${what}: the store's time must be integer epoch ms, got ${now}`).toBe(true);
      expect(now, `${what}: the store's clock ran backwards between two calls`).toBeGreaterThanOrEqual(previous);
    }
    this.modelNow = now;
  }

  describeTime(now: number): string {
    if (!this.clientClock) return `store time ${now}`;
    const offset = now - FAKE_EPOCH;
    if (offset < 0 || offset >= 1_000 * 60_000) return `epoch ms ${now}`;
    const minutes = Math.floor(offset / 60_000);
    const seconds = ((offset % 60_000) / 1000).toFixed(3).padStart(6, '0');
    return `FAKE_EPOCH+${minutes}:${seconds}`;
  }
}

async function makeStore<S extends Store>(options: ResolvedOptions<S>): Promise<S> {
  const store = await options.createStore();
  const candidate = store as Partial<Store> | null | undefined;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.limit !== 'function' ||
    typeof candidate.capabilities !== 'object'
  ) {
    throw new Error(`conformance (${options.name}): createStore() must return a store (an object with capabilities, limit and reset)`);
  }
  return store;
}

/**
 * Registers the hooks that give every test of the suite a fresh context, and returns its accessor. The store is
 * made per test (or once per suite) and torn down after; the prefix is new for every test.
 */
export function useTestContext<S extends Store>(options: ResolvedOptions<S>): () => TestContext<S> {
  let shared: S | undefined;
  let current: TestContext<S> | undefined;
  if (options.storeScope === 'suite') {
    beforeAll(async () => {
      shared = await makeStore(options);
    });
    afterAll(async () => {
      if (shared !== undefined) await options.teardown(shared);
      shared = undefined;
    });
  }
  beforeEach(async () => {
    const store = shared ?? (await makeStore(options));
    current = new TestContext(store, options, `${options.keyPrefix}-${RUN}-${++sequence}`);
  });
  afterEach(async () => {
    const done = current;
    current = undefined;
    if (done !== undefined && options.storeScope === 'test') await options.teardown(done.store);
  });
  return () => {
    if (current === undefined) throw new Error('conformance: the test context is only available inside a test');
    return current;
  };
}

/** What decides which of a group's tests a run registers, skips or leaves out. */
export interface GroupSettings {
  /** The suite drives a fake clock (`clock: 'client'`). */
  readonly clientClock: boolean;
  /** The adopter gave `inspectKeys`. */
  readonly inspect: boolean;
  /** Whose clock removes the keys (`keyExpiry`). */
  readonly keyExpiry: 'client' | 'store';
  /** The store runs leases (`capabilities.leases`). */
  readonly leases: boolean;
}

/**
 * Title suffix of the key checks that stand in for expiry at the fake clock's resetAt on a client-clock store whose
 * keys expire by its own clock: reported, with the reason, where the expiry tests would be.
 */
export const STORE_KEY_EXPIRY = "(keyExpiry 'store': keys expire by the store's clock, checked by its store-clock run)";

/** What a test that reads the store's keys gets: the adopter's `inspectKeys` turns them on. */
export const NEEDS_KEYS = '(needs inspectKeys)';

/**
 * Registers a test that inspects the store's keys. Without `inspectKeys` it is skipped, and reported as skipped
 * with the reason in its title, rather than passing having checked nothing.
 */
export function itWithKeys(inspect: boolean, title: string, test: () => Promise<void>): void {
  it.skipIf(!inspect)(`${title} ${NEEDS_KEYS}`, test);
}
