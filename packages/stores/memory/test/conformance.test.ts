import { describeStoreConformance } from '@sluice/conformance';
import { memoryStore, type MemoryStore } from '../src/index.js';
import { heldKeys } from './support/held-keys.js';

describeStoreConformance<MemoryStore>({
  name: 'memory',
  createStore: () => memoryStore(),
  clock: 'client',
  capabilities: { synchronous: true, operations: ['take', 'reserve'], leases: true },
  inspectKeys: ({ store, prefix, now }) => heldKeys(store, now).filter((key) => key.startsWith(`${prefix}:`)),
  requireAll: true,
});
