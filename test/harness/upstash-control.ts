/**
 * Client of the Upstash fixture's test-only control API, over fetch only, so tests in any environment (Node
 * workers, vitest's edge-runtime) can read the counters and switch faults of a fixture started elsewhere.
 */
import type { UpstashFault, UpstashFixtureStats } from './upstash-fixture.js';

export interface FixtureControl {
  stats(): Promise<UpstashFixtureStats>;
  /** Zeroes the counters and clears any fault. */
  reset(): Promise<void>;
  fault(fault: UpstashFault | null): Promise<void>;
}

export function fixtureControl(url: string, token: string): FixtureControl {
  const call = async (action: string, init?: { method: string; body?: string }): Promise<unknown> => {
    const response = await fetch(`${url}/__fixture/${action}`, {
      method: init?.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: init?.body,
    });
    const payload = (await response.json()) as unknown;
    if (!response.ok) throw new Error(`fixture control ${action} failed: ${JSON.stringify(payload)}`);
    return payload;
  };
  return {
    stats: async () => (await call('stats')) as UpstashFixtureStats,
    reset: async () => {
      await call('reset', { method: 'POST' });
    },
    fault: async (fault) => {
      await call('fault', { method: 'POST', body: JSON.stringify({ fault }) });
    },
  };
}
