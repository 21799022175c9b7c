import { defineConfig } from 'vitest/config';

// Cross-package suites. They start real processes (npm, node, redis-server), so each file runs in its own fork
// and the default per-test budget is generous; suites that need more state their own timeout.
// The tier's fleet simulation keeps four processes with 64 decisions in flight each busy for half a minute: it runs
// after every other suite, alone (a later group), so that it neither starves their deadlines nor is starved by them.
// So does the outbound fleet, whose cold processes must send on their booked slots to the millisecond.
const shared = {
  pool: 'forks',
  testTimeout: 30_000,
  hookTimeout: 60_000,
} as const;
const FLEET = 'fleet/tiered-fleet-simulation.test.ts';
const OUTBOUND = 'outbound/outbound.test.ts';

export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          ...shared,
          name: 'suites',
          include: ['**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/fixtures/**', FLEET, OUTBOUND],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { ...shared, name: 'fleet', include: [FLEET], sequence: { groupOrder: 1 } } },
      { extends: true, test: { ...shared, name: 'outbound', include: [OUTBOUND], sequence: { groupOrder: 2 } } },
    ],
  },
});
