import { parseDuration, type Duration } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { rejectUnknownOptions, requireObject } from '../shared/validate.js';

/** Options every rule factory accepts. */
export interface RuleBaseOptions {
  /**
   * Names the rule's state. Keep it stable across deploys: changing a limit keeps the counters, changing the id
   * starts from zero. @default derived from the algorithm and its window, e.g. `fw:60000`
   */
  id?: string;
}

const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Validates the options object of a rule factory and returns a reader for its fields. */
export function readRuleOptions(value: unknown, factory: string, known: readonly string[]) {
  const options = requireObject(value, factory);
  rejectUnknownOptions(options, ['id', ...known], factory);
  return {
    options,
    duration(field: string, fallback?: Duration): number {
      const raw = options[field] ?? fallback;
      if (raw === undefined) {
        throw new SluiceError('INVALID_OPTION', `${factory}: ${field} is required (milliseconds or a string like '1s')`);
      }
      return parseDuration(raw, `${factory}: ${field}`);
    },
    id(fallback: string): string {
      const id = options.id ?? fallback;
      if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
        throw new SluiceError(
          'INVALID_OPTION',
          `${factory}: id must be 1 to 64 characters of letters, digits, '_', '.', ':' or '-', got ${describe(id)}`,
        );
      }
      return id;
    },
  };
}
