/**
 * What a sluice observer receives, and the one word a metric files each decision under. The limiter's
 * `DecisionEvent` comes from @sluice/core; the concurrency limiter's and the shedders' events are described here by
 * the fields this package reads, so any of them (and any later component that reports the same shape) fits.
 */
import type { DecisionEvent } from '@sluice/core';

/** The event of a concurrency limiter (`component: 'concurrency'`), a fleet shedder or a utilization shedder. */
export interface ComponentEvent {
  /** Which kind of component decided. A limiter's event has no `component`. */
  readonly component: 'concurrency' | 'fleet' | 'utilization';
  /** The component's name. */
  readonly limiter: string;
  /** `acquire` (concurrency, fleet) or `check` (utilization). */
  readonly operation: string;
  /** The request's class, for the shedders. */
  readonly priority?: string;
  readonly decision: {
    readonly allowed: boolean;
    /** `ok`, `concurrency_limited`, `shed`, `shadow`, `disabled`, `store_unavailable`. */
    readonly reason: string;
    /** True when a store failure made the failure policy answer (the utilization shedder has no store). */
    readonly degraded?: boolean;
  };
  /** From the call to its answer, in ms. */
  readonly durationMs: number;
}

/** Anything a sluice component hands its `onDecision` observer. */
export type ObservedEvent = DecisionEvent | ComponentEvent;

/**
 * The `sluice.outcome` of a decision, one of six:
 * - `degraded`: the store failed and the failure policy answered (allowed or not: see `sluice.allowed`); it wins
 *   over the others, because a policy answer is never an ordinary one;
 * - `disabled`: the component is switched off (mode `off`), nothing was counted;
 * - `shadow_limited`: shadow mode let through what enforce mode would have refused (limited or shed);
 * - `shed`: a load shedder refused (HTTP 503);
 * - `limited`: a limiter or a concurrency limiter refused (HTTP 429), the cost too large for a rule included;
 * - `allowed`: everything else that was let through.
 */
export type DecisionOutcome = 'allowed' | 'limited' | 'shadow_limited' | 'shed' | 'degraded' | 'disabled';

/** The outcome a metric files this event under (see `DecisionOutcome`). */
export function decisionOutcome(event: ObservedEvent): DecisionOutcome {
  const { decision } = event;
  if (decision.degraded === true) return 'degraded';
  switch (decision.reason) {
    case 'disabled':
      return 'disabled';
    case 'shadow':
      return 'shadow_limited';
    case 'shed':
      return 'shed';
    default:
      return decision.allowed ? 'allowed' : 'limited';
  }
}
