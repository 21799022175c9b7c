import type { SyncStore } from '@sluice/core';
import { evaluate, type LimitRequest, type LimitResult, type State, type StoreCapabilities } from '@sluice/core/store';

interface Slot {
  state: State;
  /** Epoch ms at which the state stops meaning anything (now + ttlMs when written). */
  expiresAt: number;
}

/**
 * The plain model every store must agree with: a Map of states run through core's `evaluate`, with no eviction,
 * no batching and no cleverness. The conformance suite replays every request against it at the time the store
 * under test reported, and requires identical decisions.
 */
export class ReferenceStore implements SyncStore {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset', 'take', 'reserve'],
  };
  private readonly data = new Map<string, Map<string, Slot>>();

  limit(request: LimitRequest): LimitResult {
    const { key, rules, now } = request;
    const slots = this.data.get(key);
    const states = rules.map((rule) => {
      const slot = slots?.get(rule.id);
      return slot !== undefined && slot.expiresAt > now ? slot.state : undefined;
    });
    const evaluation = evaluate(rules, states, now, request.cost, request.operation, request.maxWaitMs);
    if (evaluation.writes !== undefined) {
      const target = slots ?? new Map<string, Slot>();
      evaluation.writes.forEach((write, i) => {
        // A state worth nothing (ttl <= 0) is deleted, as every executor does (see core's store/store.ts).
        if (write.ttlMs > 0) target.set(rules[i]!.id, { state: write.state, expiresAt: now + write.ttlMs });
        else target.delete(rules[i]!.id);
      });
      if (target.size > 0) this.data.set(key, target);
      else this.data.delete(key);
    }
    return { now, outcomes: evaluation.outcomes };
  }

  reset(key: string, ruleIds: readonly string[]): void {
    const slots = this.data.get(key);
    if (slots === undefined) return;
    for (const id of ruleIds) slots.delete(id);
    if (slots.size === 0) this.data.delete(key);
  }

  /** Base keys holding state that is still live at `now`. */
  liveKeys(now: number): string[] {
    const keys: string[] = [];
    for (const [key, slots] of this.data) {
      for (const slot of slots.values()) {
        if (slot.expiresAt > now) {
          keys.push(key);
          break;
        }
      }
    }
    return keys;
  }
}

/** The conformance model as a store, e.g. to differential-test a store of your own outside this suite. */
export function referenceStore(): ReferenceStore {
  return new ReferenceStore();
}
