import type { Admissions, Verdict } from './judge.mjs';

export const FLEET_DEFAULTS: {
  processes: number;
  inFlight: number;
  durationMs: number;
  limit: number;
  windowMs: number;
  identities: number;
  exponent: number;
  abuserShare: number;
};
export interface FleetOptions extends Partial<typeof FLEET_DEFAULTS> {
  port: number;
  contestant: 'plain' | 'lua-incr' | 'reference-lease' | 'deny-cache' | 'lease' | 'async';
  /** Further tieredStore options. */
  tier?: Record<string, unknown>;
  /** Further createLimiter options (none: the README's configuration). */
  limiter?: Record<string, unknown>;
  during?: (startAt: number, stopAt: number) => Promise<void>;
  seed?: number;
}
export interface FleetRun {
  contestant: string;
  verdict: Verdict;
  decisions: number;
  decisionsPerSec: number;
  commandsPerDecision: number;
  degraded: number;
  degradedAdmitted: number;
  /** Degraded decisions by error code, and those that admitted by the decision's reason ('store_unavailable': the limiter's failure policy). */
  degradedCodes: Record<string, number>;
  degradedAdmittedReasons: Record<string, number>;
  lastDegradedAt: number;
  rejected: number;
  unhandled: string[];
  loopDelayMaxMs: number;
  loopDelayP99Ms: number;
  stats: Record<string, number>;
  admissions: Admissions;
}
export function runRateFleet(options: FleetOptions): Promise<FleetRun>;
export function redisCommand(port: number, command: string, timeoutMs?: number): Promise<string>;
export function commandsExecuted(port: number): Promise<number>;
