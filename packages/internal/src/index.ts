// The helpers every sluice package shares. Their one copy is core's, exported as `@sluice/core/internal`: each
// published package that imports this private package bundles this file, which only re-exports that subpath, so
// a bundle of several sluice packages holds the helpers once (they stay imports of @sluice/core, a dependency of
// every package that uses them).
export {
  describeValue,
  durationOption,
  integerOption,
  isPromiseLike,
  optionalFunction,
  positiveInteger,
  rejectUnknownOptions,
  requireObject,
} from '@sluice/core/internal';
export type { DurationRange } from '@sluice/core/internal';
