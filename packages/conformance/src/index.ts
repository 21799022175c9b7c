export { describeStoreConformance } from './describe-store-conformance.js';
export { describeDenySourceConformance } from './describe-deny-source-conformance.js';
export type { DenySourceConformanceOptions } from './describe-deny-source-conformance.js';
export type { InspectKeysContext, StoreConformanceOptions } from './options.js';
// The model's class is a type only: a reference store is made by its factory, like every store.
export { referenceStore } from './reference-store.js';
export type { ReferenceStore } from './reference-store.js';
export { FAKE_EPOCH, clockOffset } from './time.js';
