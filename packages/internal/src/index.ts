// The helpers every sluice package shares. Their one copy is core's source: this package compiles those files
// (tsup.config.ts), and each published package that imports it bundles the result, so none depends on it at run time.
export { describe as describeValue } from '../../core/src/describe.js';
export { optionalFunction, rejectUnknownOptions } from '../../core/src/validate.js';
export { durationOption } from '../../core/src/duration.js';
export type { DurationRange } from '../../core/src/duration.js';
export { isPromiseLike } from '../../core/src/promise.js';
