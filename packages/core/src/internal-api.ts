// `@sluice/core/internal`: the helpers every sluice package shares (option checks, value descriptions, durations,
// the promise check), exported once here so that a bundle holding several sluice packages (a worker with core, http,
// an adapter and a store) carries one copy of them instead of one per package. For sluice's own packages, which
// import this subpath directly: not for applications, and not covered by semver.
export { describe as describeValue } from './describe.js';
export { integerOption, optionalFunction, positiveInteger, rejectUnknownOptions, requireObject } from './validate.js';
export { durationOption } from './duration.js';
export type { DurationRange } from './duration.js';
export { isPromiseLike } from './promise.js';
