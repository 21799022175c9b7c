import type { Store } from '@sluice/core';
import { describe } from 'vitest';
import { useTestContext, type GroupSettings, type TestContext } from './context.js';
import { capabilityTests, syncCapabilityTest } from './groups/capabilities.js';
import { concurrencyTests } from './groups/concurrency.js';
import { edgeTests } from './groups/edges.js';
import { expiryTests } from './groups/expiry.js';
import { identityTests } from './groups/identities.js';
import { isolationTests } from './groups/isolation.js';
import { leaseTests } from './groups/leases.js';
import { operationTests } from './groups/operations.js';
import { resetTests } from './groups/reset.js';
import { vectorTests } from './groups/vectors.js';
import { resolveOptions, type StoreConformanceOptions } from './options.js';

/**
 * Registers the sluice store conformance suite (vitest `describe`/`it`) for one store. Call it at the top level of
 * a test file. Every decision is checked twice: against hand-computed vectors, and against the reference model
 * replayed at the time the store reported.
 * @example
 * import { describeStoreConformance } from '@sluice/conformance';
 * import { memoryStore } from '@sluice/memory';
 *
 * describeStoreConformance({
 *   name: 'memory',
 *   createStore: () => memoryStore(),
 *   clock: 'client',
 *   capabilities: { synchronous: true },
 * });
 */
export function describeStoreConformance<S extends Store>(options: StoreConformanceOptions<S>): void {
  const resolved = resolveOptions(options);
  const clientClock = resolved.clock === 'client';
  // Tests that read the store's keys run only with inspectKeys; without it they are reported as skipped.
  const inspect = resolved.inspectKeys !== undefined;
  const settings: GroupSettings = { clientClock, inspect, keyExpiry: resolved.keyExpiry, leases: resolved.leases };
  describe(`store conformance: ${resolved.name} (${resolved.clock} clock)`, () => {
    const get = useTestContext(resolved) as unknown as () => TestContext<Store>;
    capabilityTests(get);
    syncCapabilityTest(get, resolved.synchronous);
    vectorTests(get, clientClock, 'async');
    edgeTests(get, inspect);
    expiryTests(get, settings);
    isolationTests(get, inspect);
    resetTests(get, inspect);
    identityTests(get, inspect);
    concurrencyTests(get);
    operationTests(get, resolved.operations, clientClock);
    leaseTests(get, settings);
    if (resolved.synchronous) {
      describe('the same vectors through limitSync, peekSync and refundSync', () => {
        vectorTests(get, clientClock, 'sync');
      });
    }
  });
}
