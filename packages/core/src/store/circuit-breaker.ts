/**
 * A consecutive-failure circuit breaker. Closed: every call goes to the store. After `failureThreshold`
 * failures in a row it opens: calls are answered by the failure policy without touching the store. After
 * `cooldown` one probe call is let through (half-open); its success closes the circuit, its failure opens it
 * for another cooldown. Time comes from the limiter's clock, so tests drive it with a fake clock.
 */
import type { Duration } from '../shared/duration.js';

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. @default 5 */
  failureThreshold?: number;
  /** How long the circuit stays open before a probe: ms or a string like `'2s'`. @default '2s' */
  cooldown?: Duration;
}

export type CircuitState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  private failures = 0;
  private openedAt = 0;
  private probing = false;
  private current: CircuitState = 'closed';

  constructor(
    private readonly failureThreshold: number,
    private readonly cooldownMs: number,
  ) {}

  get state(): CircuitState {
    return this.current;
  }

  /** Whether a call may go to the store now. Claims the single probe slot when half-open. */
  allowRequest(now: number): boolean {
    if (this.current === 'closed') return true;
    if (this.current === 'open' && now - this.openedAt >= this.cooldownMs) this.current = 'half-open';
    if (this.current === 'half-open' && !this.probing) {
      this.probing = true;
      return true;
    }
    return false;
  }

  onSuccess(): void {
    this.failures = 0;
    this.probing = false;
    this.current = 'closed';
  }

  onFailure(now: number): void {
    this.probing = false;
    this.failures++;
    if (this.current === 'half-open' || this.failures >= this.failureThreshold) {
      this.current = 'open';
      this.openedAt = now;
    }
  }
}
