import { SluiceError } from '@sluice/core';
import { describeValue, integerOption, rejectUnknownOptions, requireObject } from '@sluice/core/internal';

/** The options every store running this script takes, checked once for `@sluice/redis` and `@sluice/upstash`. */
export interface ScriptStoreOptions {
  /** Whose clock decides: the store's (`TIME` in the script) or this process's. */
  readonly clock: 'store' | 'client';
  readonly batch: boolean;
  readonly maxBatch: number;
}

/**
 * Checks a script store's options object: an object, no unknown option (`known` lists the store's own ones as
 * well), and the shared `clock`, `batch` and `maxBatch`, with their defaults. `where` names the factory.
 */
export function scriptStoreOptions(options: unknown, known: readonly string[], where: string): ScriptStoreOptions {
  const given: { clock?: unknown; batch?: unknown; maxBatch?: unknown } = requireObject(options, where);
  rejectUnknownOptions(given, known, where);
  const clock = given.clock ?? 'store';
  if (clock !== 'store' && clock !== 'client') {
    throw new SluiceError('INVALID_OPTION', `${where}: clock must be 'store' or 'client', got ${describeValue(clock)}`);
  }
  const batch = given.batch ?? true;
  if (typeof batch !== 'boolean')
    throw new SluiceError('INVALID_OPTION', `${where}: batch must be true or false, got ${describeValue(batch)}`);
  const maxBatch = integerOption(given.maxBatch ?? 64, `${where}: maxBatch`, 1, 1000);
  return { clock, batch, maxBatch };
}
