import type { SyncStore } from '../../src/index.js';
import { evaluate, type LimitRequest, type LimitResult, type State, type StoreCapabilities } from '../../src/store/index.js';

/**
 * The smallest honest store: a Map of per-rule records, each run through core's `evaluate` (the reference every
 * store executor must match). `expire: true` drops a record once its ttl has passed, as the memory store does;
 * `expire: false` keeps stale records forever, so the algorithms must also read old state correctly.
 * Core cannot depend on @sluice/memory (memory depends on core; turbo rejects the cycle), hence this store.
 */
export class MapStore implements SyncStore {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset'],
  };
  readonly records = new Map<string, { state: State; expiresAt: number }>();
  calls = 0;
  writes = 0;
  /** The last request received, to check what the limiter sends. */
  last: LimitRequest | undefined;

  constructor(private readonly expire = true) {}

  limit(request: LimitRequest): LimitResult {
    this.calls++;
    this.last = request;
    const { key, rules, now } = request;
    const states = rules.map((rule) => this.read(`${key}:${rule.id}`, now));
    const evaluation = evaluate(rules, states, now, request.cost, request.operation, request.maxWaitMs);
    if (evaluation.writes !== undefined) {
      evaluation.writes.forEach((write, i) => {
        this.writes++;
        // A state worth nothing (ttl <= 0) is deleted, as every executor does.
        if (write.ttlMs > 0) this.records.set(`${key}:${rules[i]!.id}`, { state: write.state, expiresAt: now + write.ttlMs });
        else this.records.delete(`${key}:${rules[i]!.id}`);
      });
    }
    return { now, outcomes: evaluation.outcomes };
  }

  reset(key: string, ruleIds: readonly string[]): void {
    for (const id of ruleIds) this.records.delete(`${key}:${id}`);
  }

  /** An independent copy, to probe "what if" without disturbing this store. */
  clone(): MapStore {
    const copy = new MapStore(this.expire);
    for (const [key, record] of this.records) copy.records.set(key, { state: [...record.state], expiresAt: record.expiresAt });
    return copy;
  }

  private read(key: string, now: number): State | undefined {
    const record = this.records.get(key);
    if (record === undefined) return undefined;
    if (this.expire && record.expiresAt <= now) return undefined;
    return record.state;
  }
}

/** The same store behind promises: the shape of a remote store, for async-path and type tests. */
export class AsyncMapStore {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset'] } as const;
  readonly inner = new MapStore();

  limit(request: LimitRequest): Promise<LimitResult> {
    return Promise.resolve(this.inner.limit(request));
  }

  reset(key: string, ruleIds: readonly string[]): Promise<void> {
    this.inner.reset(key, ruleIds);
    return Promise.resolve();
  }
}
