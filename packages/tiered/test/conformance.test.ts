import { describeStoreConformance } from '@sluice/conformance';
import { memoryStore } from '@sluice/memory';
import { tieredStore, type TieredStore } from '../src/index.js';

// The deny cache is the tier's exact strategy: in front of a memory store it must pass the whole store
// conformance suite, as the memory store itself does (refusals replayed locally included).
describeStoreConformance<TieredStore>({
  name: 'tiered (deny cache) over memory',
  createStore: () => tieredStore({ remote: memoryStore(), instances: 1, timers: false }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
});
