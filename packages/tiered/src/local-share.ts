import { memoryStore, type MemoryStore } from '@sluice/memory';
import type { LimitRequest, LimitResult, RuleOutcome, StoreCapabilities, SyncStore } from '@sluice/core/store';

/**
 * What one instance decides on while the remote store is down: the same rules on a memory store, with every cost
 * multiplied by the number of instances, so that each instance admits its share (limit ÷ instances) and the fleet
 * about the limit. Its answers are reported in ordinary units (remaining and granted divided back, the limit shown
 * as the share). It is the failure policy's fallback store: the policy calls it when a remote call fails.
 */
export class LocalShare implements SyncStore {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset', 'take', 'reserve'],
  };
  private readonly store: MemoryStore;

  constructor(
    private readonly instances: number,
    maxKeys: number,
  ) {
    this.store = memoryStore({ maxKeys });
  }

  limit(request: LimitRequest): LimitResult {
    const n = this.instances;
    // A product beyond 2^53 is refused as larger than any capacity, as an oversize cost always is.
    const cost = Math.min(request.cost * n, Number.MAX_SAFE_INTEGER);
    const result = this.store.limit({ ...request, cost });
    return { now: result.now, outcomes: result.outcomes.map((o) => share(o, n)) };
  }

  reset(key: string, ruleIds: readonly string[]): void {
    this.store.reset(key, ruleIds);
  }
}

function share(outcome: RuleOutcome, n: number): RuleOutcome {
  const scaled: RuleOutcome = { ...outcome, limit: Math.floor(outcome.limit / n), remaining: Math.floor(outcome.remaining / n) };
  return outcome.granted === undefined ? scaled : { ...scaled, granted: Math.floor(outcome.granted / n) };
}
