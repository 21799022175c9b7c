// `@sluice/core/internal`: the helpers every sluice package shares (option checks, value descriptions, durations,
// the promise check, the runtime's timers), exported once here so that a bundle holding several sluice packages (a worker with core, http,
// an adapter and a store) carries one copy of them instead of one per package. For sluice's own packages, which
// import this subpath directly: not for applications, and not covered by semver.
export { describe as describeValue } from '../shared/describe.js';
export {
  clockOption,
  integerOption,
  MODES,
  modeOption,
  nameOption,
  optionalFunction,
  optionNames,
  positiveInteger,
  rejectUnknownOptions,
  requireObject,
  timerDuration,
} from '../shared/validate.js';
export { MAX_TIMER_MS, timers, unref } from '../shared/timers.js';
export type { LimiterMode } from '../shared/types.js';
export { durationOption } from '../shared/duration.js';
export type { DurationRange } from '../shared/duration.js';
export { isPromiseLike } from '../shared/promise.js';
