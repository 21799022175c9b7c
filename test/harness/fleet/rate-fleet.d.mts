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
  tier?: Record<string, unknown>;
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
