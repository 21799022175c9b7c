/**
 * How a limiter calls its store, made once per limiter: `limit(request)`, or for a single-rule step-operation
 * request (an `IdentityRequest`) the store's seam, when it has one (store/store.ts):
 * - a FastPathStore's `limitOne` (synchronous, client clock) answers into the reused `answer`;
 * - a MemoryFirstStore's `limitOne` answers from memory into the reused `memoryAnswer`, and anything else (a remote
 *   decision, a degraded one) as `limit` would: a result or a promise of one.
 * The failure policy runs whichever call this gives; the limiter's `toDecision` recognises the two reused answers.
 */
import { IdentityRequest } from './key-cache.js';
import type {
  FastPath,
  FastPathStore,
  LimitRequest,
  LimitResult,
  MemoryAnswer,
  MemoryFirstStore,
  MemoryPath,
  RuleAnswer,
  Store,
} from '../store/store.js';

/** What a store call answers with: a result or one of the two reused answers (or a promise of a result). */
export type StoreAnswer = LimitResult | RuleAnswer;

export class StoreCalls {
  /** The FastPathStore's path over this limiter's keys, when the store is one. */
  readonly fastPath: FastPath | undefined;
  /** The MemoryFirstStore's path over this limiter's keys, when the store is one (and no FastPathStore). */
  readonly memoryPath: MemoryPath | undefined;
  /** Written by the fast path: every single-rule answer of a FastPathStore. */
  readonly answer: RuleAnswer = { allowed: true, remaining: 0, resetAt: 0, retryAt: 0 };
  /** Written by the memory path: an answer the store gave from memory, with its time. */
  readonly memoryAnswer: MemoryAnswer = { allowed: true, remaining: 0, resetAt: 0, retryAt: 0, now: 0 };
  /** The calls, made once (the policy calls them; no closure per decision). */
  readonly limit: (request: LimitRequest) => LimitResult | Promise<LimitResult>;
  readonly limitOne = (request: LimitRequest): RuleAnswer => {
    this.fastPath!.limitOne(request as IdentityRequest, this.answer);
    return this.answer;
  };
  readonly limitFromMemory = (request: LimitRequest): StoreAnswer | Promise<LimitResult> =>
    this.memoryPath!.limitOne(request as IdentityRequest, this.memoryAnswer) ?? this.memoryAnswer;

  /**
   * @param fallback whether the failure policy asks a fallback store, which then gets the request: no memory path
   * then, as the fallback store may copy the request with a spread, which loses an IdentityRequest's key (a getter)
   */
  constructor(store: Store, keyPrefix: string, fallback: boolean) {
    this.limit = (request) => store.limit(request);
    const { synchronous, clock, memoryFirst } = store.capabilities;
    const bind = (store as Partial<FastPathStore>).bindFastPath;
    const bindMemory = (store as Partial<MemoryFirstStore>).bindMemoryPath;
    if (synchronous === true && clock === 'client' && typeof bind === 'function') this.fastPath = bind.call(store, keyPrefix);
    else if (memoryFirst === true && typeof bindMemory === 'function' && !fallback) this.memoryPath = bindMemory.call(store, keyPrefix);
  }

  /** Whether the store has a seam: single-rule step-operation requests are then `IdentityRequest`s. */
  get seam(): boolean {
    return this.fastPath !== undefined || this.memoryPath !== undefined;
  }

  /** The call for a request: its seam for an IdentityRequest, `limit` otherwise. */
  callFor(request: LimitRequest): (request: LimitRequest) => StoreAnswer | Promise<LimitResult> {
    if (!(request instanceof IdentityRequest)) return this.limit;
    return this.fastPath !== undefined ? this.limitOne : this.limitFromMemory;
  }
}
