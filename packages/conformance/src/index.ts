export { describeStoreConformance } from './describe-store-conformance.js';
export type { InspectKeysContext, StoreConformanceOptions } from './options.js';
export { ReferenceStore, referenceStore } from './reference-store.js';
export { T0, clockOffset } from './time.js';
