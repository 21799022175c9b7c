/**
 * The limiter's public shape: its options, the changes `configure()` takes, the per-call options and the
 * `Limiter` / `SyncLimiter` interfaces. The implementation is limiter/limiter.ts.
 */
import type { CircuitBreakerOptions, CircuitState } from '../store/circuit-breaker.js';
import type { Decision } from './decision.js';
import type { DenyEntry } from '../deny/entries.js';
import type { DenyLineage, LiveDenyLineage } from '../deny/lineage.js';
import type { Duration } from '../shared/duration.js';
import type { StoreErrorPolicy } from '../store/failure-policy.js';
import type { Rule } from '../algorithms/rules.js';
import type { Store } from '../store/store.js';
import type { LimiterMode, WaitOptions } from '../shared/types.js';

export type { LimiterMode } from '../shared/types.js';

/**
 * The deny list's own switch, apart from the limiter's mode (the kill switch turns off limits, not the list):
 * `enforce` refuses a listed client (403), `shadow` reports it (`onDenied` with `shadow: true`) and serves it, `off`
 * ignores the list.
 */
export type DenyMode = LimiterMode;

export type { StoreErrorPolicy };

export interface LimiterOptions<S extends Store = Store> {
  store: S;
  /** One rule, or several that must all pass ("10 per second and 10,000 per day"). */
  rules: Rule | readonly Rule[];
  /** Namespaces this limiter's keys; two limiters on one store never share state. @default 'default' */
  name?: string;
  /** Key prefix for every limiter on the store. @default 'sluice' */
  prefix?: string;
  /** Epoch milliseconds. Inject a fake clock in tests. @default Date.now */
  clock?: () => number;
  /** @default 'enforce' */
  mode?: LimiterMode;
  /** Per-identity rules (custom quotas). Return undefined for the limiter's rules. Keep rule ids the same to keep state. */
  quotaFor?: (identity: string) => Rule | readonly Rule[] | undefined;
  /**
   * Deadline for one store call (and for an asynchronous fallback store), async stores only. A healthy local
   * Redis answers in well under a millisecond and a cross-zone one in a few, so 250 ms is far beyond any normal
   * answer yet rides out a GC pause or a reconnect blip; it bounds what a dead or hung store adds to a request
   * to a quarter second. Milliseconds or a string like `'250ms'`. See "Failure policy" in core's README.
   * @default '250ms'
   */
  timeout?: Duration;
  /**
   * `'allow'` fails open, `'deny'` fails closed, a store (e.g. `memoryStore()`) keeps limiting locally. Every
   * answer given by the policy has `degraded: true` and `error.code` STORE_TIMEOUT, STORE_ERROR or CIRCUIT_OPEN.
   * @default 'allow' (fail open, so a store outage does not become an API outage); `'deny'` on a store that answers
   * its own failures (`capabilities.answersFailures`: `@sluice/tiered`), whose safe answers are already given
   */
  onStoreError?: StoreErrorPolicy;
  /**
   * Stop calling a failing store for a while. `false` turns it off. @default { failureThreshold: 5, cooldown: '2s' };
   * `false` on a store that answers its own failures (`@sluice/tiered` has its own breaker)
   */
  circuitBreaker?: CircuitBreakerOptions | false;
  /**
   * Called after every decision with what was decided and how long it took (metrics, logs, audits; see
   * `@sluice/otel`). It runs inline: keep it cheap. An exception it throws is swallowed, never the caller's.
   * Unset, it costs nothing (`pnpm bench memory`).
   */
  onDecision?: (event: DecisionEvent) => void;
}

/** What `onDecision` receives. */
export interface DecisionEvent {
  /** The limiter's name. */
  readonly limiter: string;
  readonly operation: 'limit' | 'peek' | 'refund' | 'take' | 'reserve';
  readonly identity: string;
  readonly decision: Decision;
  /** From the call to its answer, in ms (fractional where the runtime's performance.now() is). */
  readonly durationMs: number;
}

/** The changes `configure()` accepts. */
export interface LimiterChanges {
  rules?: Rule | readonly Rule[];
  mode?: LimiterMode;
  /**
   * Rules for single identities, over the limiter's rules and over `quotaFor` (per-customer quotas set at run time,
   * e.g. from the shared store by `watchConfig`). Replaces the previous quotas; an empty map removes them.
   */
  quotas?: ReadonlyMap<string, Rule | readonly Rule[]>;
  /**
   * Identities and IP ranges the HTTP layer refuses outright (403), e.g. from the shared store by `watchConfig`.
   * Replaces the previous list; `[]` empties it. The limiter only holds the list: its decisions do not read it.
   */
  deny?: readonly DenyEntry[] | LiveDenyLineage;
  /** Whether the HTTP layer enforces the deny list, reports it only (`shadow`) or ignores it (`off`), whatever `mode` is. */
  denyMode?: DenyMode;
}

export interface LimitOptions {
  /** Weight of this request, a non-negative integer. 0 reads without consuming. @default 1 */
  cost?: number;
}

export interface TakeOptions {
  /** Most units to take, a non-negative integer. @default 1 */
  cost?: number;
}

export interface ReserveOptions {
  /** Units to book, a non-negative integer. @default 1 */
  cost?: number;
  /** Longest wait accepted (ms or a string like `'5s'`, from 0): a booking that would start later is refused. */
  maxWait: Duration;
}

export interface Limiter {
  readonly name: string;
  readonly rules: readonly Rule[];
  readonly mode: LimiterMode;
  /** The store this limiter decides on (adapters name it in their warnings). */
  readonly store: Store;
  /** State of the circuit breaker in front of the store. */
  readonly circuit: CircuitState;
  /** Takes `cost` from every rule if all have room; otherwise takes nothing. */
  limit(identity: string, options?: LimitOptions): Promise<Decision>;
  /** Whether `cost` (default 1) would pass now, without taking anything. */
  peek(identity: string, options?: LimitOptions): Promise<Decision>;
  /** Gives `cost` back, e.g. when the work it paid for was not done. */
  refund(identity: string, options?: LimitOptions): Promise<Decision>;
  /** Forgets an identity's state in every rule. */
  reset(identity: string): Promise<void>;
  /** Per-identity rules set by `configure({ quotas })`. */
  readonly quotas: ReadonlyMap<string, readonly Rule[]>;
  /**
   * The deny list set by `configure({ deny })` (initially empty), checked and frozen. The same array object until
   * the list changes, so a reader may cache what it builds from it (a compiled matcher) keyed by the array.
   */
  readonly deny: readonly DenyEntry[];
  /**
   * The deny list as it changes, for readers that build from it (the HTTP layer's matcher): its `head` counts the
   * changes applied, and `denyChangesSince(lineage, from, head)` gives them, so a reader follows at the cost of the
   * changes instead of reading `deny` whole. A new lineage when `configure({ deny })` replaces the list. Absent on a
   * Limiter implemented outside core.
   */
  readonly denyLineage?: DenyLineage;
  /** The deny list's mode, set by `configure({ denyMode })`, independent of `mode`. @default 'enforce' */
  readonly denyMode: DenyMode;
  /** Changes rules, mode, per-identity quotas or the deny list at run time, validated like the constructor; counters are kept per rule id. */
  configure(changes: LimiterChanges): void;
  /**
   * Takes as many units as fit now, up to `cost`, from every rule alike; `granted` says how many (0 is an
   * answer, not an error: `allowed` is false and `retryAfter` says when one unit fits). Needs a store that
   * announces `take` (memory, SQLite, Redis, Upstash); others reject with UNSUPPORTED_OPERATION.
   * @example const { granted } = await limiter.take('tier:a', { cost: 50 });
   */
  take(identity: string, options?: TakeOptions): Promise<Decision>;
  /**
   * Books `cost` at the earliest time it fits on every rule, if that is within `maxWait`; `startAt` says when
   * to start (wait `startAt − now`). Later requests queue behind the booking. Denied (nothing booked) when the
   * start is further away. Needs a store that announces `reserve` (memory, SQLite, Redis, Upstash).
   * @example const d = await limiter.reserve('api.example.com', { maxWait: '5s' }); if (d.allowed) await sleep(d.startAt - d.now);
   */
  reserve(identity: string, options: ReserveOptions): Promise<Decision>;
  /**
   * Waits for a slot instead of being refused: books it with `reserve` (one atomic step in the shared store, so
   * waiters across processes queue instead of racing) and resolves at its start. Rejects with WAIT_TOO_LONG
   * (nothing booked) when the slot is further than `maxWait`, and with ABORTED when `signal` aborts (the booking
   * is given back when every rule is a bucket or GCRA). Needs a store that announces `reserve`.
   * @example await limiter.wait('api.example.com', { maxWait: '30s' }); await fetch(url);
   */
  wait(identity: string, options: WaitOptions): Promise<Decision>;
  /** `wait`, then runs `fn` and returns its result: `await limiter.schedule('api.example.com', () => fetch(url), { maxWait: '30s' })`. */
  schedule<T>(identity: string, fn: () => T | Promise<T>, options: WaitOptions): Promise<T>;
}

/** A limiter over a synchronous store also answers without a promise. */
export interface SyncLimiter extends Limiter {
  limitSync(identity: string, options?: LimitOptions): Decision;
  peekSync(identity: string, options?: LimitOptions): Decision;
  refundSync(identity: string, options?: LimitOptions): Decision;
  takeSync(identity: string, options?: TakeOptions): Decision;
  reserveSync(identity: string, options: ReserveOptions): Decision;
}
