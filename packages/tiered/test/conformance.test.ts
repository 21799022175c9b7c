import { describeStoreConformance } from '@sluice/conformance';
import { memoryStore, type MemoryStore } from '@sluice/memory';
import { tieredStore, type TieredStore } from '../src/index.js';
import { TEST_MAX_KEYS } from './support.js';

const remotes = new WeakMap<TieredStore, MemoryStore>();

// The deny cache is the tier's exact strategy: in front of a memory store it must pass the whole store
// conformance suite, as the memory store itself does (refusals replayed locally included). The tier's keys are
// its remote store's: the state that counts lives there, and the local cache only replays refusals the remote made
// (it never holds state the remote lacks), so the key checks read the remote memory store, live at the fake clock.
describeStoreConformance<TieredStore>({
  name: 'tiered (deny cache) over memory',
  createStore: () => {
    const remote = memoryStore({ maxKeys: TEST_MAX_KEYS });
    const store = tieredStore({ remote, instances: 1, timers: false, maxKeys: TEST_MAX_KEYS });
    remotes.set(store, remote);
    return store;
  },
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  inspectKeys: ({ store, prefix, now }) => {
    const remote = remotes.get(store)!;
    remote.purgeExpired(now);
    return remote.keys().filter((key) => key.startsWith(`${prefix}:`));
  },
  requireAll: true,
});
