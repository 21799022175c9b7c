import type { Decision, LimitOptions, Limiter, LimiterMode, Rule, Store, SyncLimiter } from '@sluice/core';
import { isPromiseLike } from '@sluice/core/internal';
import { expect } from 'vitest';
import type { TestContext } from './context.js';

/** Which limiter methods a test drives: `limit()`/`peek()`/`refund()`, or their `*Sync` twins. */
export type Api = 'async' | 'sync';

type Operation = 'limit' | 'peek' | 'refund';

/**
 * A limiter over the store under test, shadowed by an identical limiter over the reference model. Every call is
 * replayed on the model at the time the store reported (`decision.now`) and the two decisions must be equal in
 * every field: allowed, reason, limit, remaining, resetAt, retryAfter, rule and each rule's report.
 */
export class TrackedLimiter {
  private lastNow = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly context: TestContext<Store>,
    readonly real: Limiter,
    private readonly model: SyncLimiter,
    private readonly api: Api,
  ) {}

  limit(identity: string, cost?: number): Promise<Decision> {
    return this.call('limit', identity, cost);
  }

  peek(identity: string, cost?: number): Promise<Decision> {
    return this.call('peek', identity, cost);
  }

  refund(identity: string, cost?: number): Promise<Decision> {
    return this.call('refund', identity, cost);
  }

  async reset(identity: string): Promise<void> {
    await this.real.reset(identity);
    await this.model.reset(identity);
  }

  configure(changes: { rules?: Rule | readonly Rule[]; mode?: LimiterMode }): void {
    this.real.configure(changes);
    this.model.configure(changes);
  }

  private async call(operation: Operation, identity: string, cost: number | undefined): Promise<Decision> {
    const options: LimitOptions | undefined = cost === undefined ? undefined : { cost };
    const what = `${operation}(${label(identity)}${cost === undefined ? '' : `, cost ${cost}`})`;
    let decision: Decision;
    if (this.api === 'sync') {
      const sync = this.real as SyncLimiter;
      const answer: unknown =
        operation === 'limit'
          ? sync.limitSync(identity, options)
          : operation === 'peek'
            ? sync.peekSync(identity, options)
            : sync.refundSync(identity, options);
      if (isPromiseLike(answer)) {
        throw new Error(`${what}Sync returned a promise: a synchronous store must answer directly`);
      }
      decision = answer as Decision;
    } else {
      decision = await this.real[operation](identity, options);
    }
    if (decision.degraded) {
      const reason = decision.error instanceof Error ? decision.error.message : String(decision.error);
      throw new Error(`${what}: the store failed and the limiter answered by its failure policy: ${reason}`, { cause: decision.error });
    }
    this.context.observe(decision.now, this.lastNow, what);
    this.lastNow = decision.now;
    const expected =
      operation === 'limit'
        ? this.model.limitSync(identity, options)
        : operation === 'peek'
          ? this.model.peekSync(identity, options)
          : this.model.refundSync(identity, options);
    expect(decision, `${what} at ${this.context.describeTime(decision.now)} must equal the reference model`).toEqual(expected);
    return decision;
  }
}

/** Identity for a failure message: long ones shortened, control characters visible. */
export function label(identity: string): string {
  const shown = identity.length > 40 ? `${identity.slice(0, 20)}…(${identity.length} chars)` : identity;
  return JSON.stringify(shown);
}
