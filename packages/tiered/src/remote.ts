import type { FailureAnswer, FailurePolicy, LimitRequest, LimitResult, Store } from '@sluice/core/store';
import type { TierStats } from './entry.js';
import type { Outage } from './outage.js';

/**
 * The shared store as the tier calls it: every call under the tier's failure policy and counted, every answer
 * read for the remote clock's lead and as the end of an outage.
 */
export class Remote {
  /** Remote clock minus local clock, from the last remote answer (0 for a client-clock remote store). */
  offset = 0;
  private readonly call: (request: LimitRequest) => LimitResult | Promise<LimitResult>;

  constructor(
    readonly store: Store,
    private readonly policy: FailurePolicy,
    private readonly outage: Outage,
    counters: TierStats,
  ) {
    this.call = (request) => {
      counters.remoteCalls++;
      return store.limit(request);
    };
  }

  /** One call under the failure policy: the store's answer, or a FailureAnswer saying why there is none. */
  run(request: LimitRequest): LimitResult | FailureAnswer | Promise<LimitResult | FailureAnswer> {
    return this.policy.run(request, this.call);
  }

  /** The remote clock's lead over the local one (a store-clock remote answers in its own time); an answer ends an outage. */
  observe(request: LimitRequest, result: LimitResult): void {
    this.offset = this.store.capabilities.clock === 'store' ? result.now - request.now : 0;
    this.outage.answered();
  }
}
