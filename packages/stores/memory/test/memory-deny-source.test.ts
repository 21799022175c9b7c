/** memoryConfigSource's deny lists (node and edge-runtime): the shared deny source suite, `forget` as the lost list. */
import { describeDenySourceConformance } from '@sluice/conformance';
import { memoryConfigSource } from '../src/index.js';

// One process holds the lists: the two sources of the concurrency test are the same one.
const source = memoryConfigSource();

describeDenySourceConformance({
  name: 'memory',
  createSource: () => source.deny,
  lose: (name) => source.deny.forget(name),
  push: true,
  countsRemoved: true,
});
