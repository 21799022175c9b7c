/**
 * Rules as plain JSON (for rules kept in the shared store, written by the `sluice config` CLI): a spec is
 * the options of a rule factory plus the algorithm's name, `{ "algorithm": "gcra", "limit": 10, "period": "1s" }`.
 * `ruleFromSpec` builds the rule with the factory itself, so a spec is validated exactly as code is; `ruleSpec`
 * writes a rule back out (durations in milliseconds), and `ruleFromSpec(ruleSpec(rule))` equals `rule`.
 */
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';
import { ALGORITHM_NAMES } from './names.js';
import type { Duration } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import type { AlgorithmName, Rule } from './rules.js';

/** A rule as JSON: a factory's options and `algorithm`. Durations are milliseconds or strings like '1s'. */
export type RuleSpec =
  | { algorithm: 'fixed-window'; id?: string; limit: number; window: Duration; stagger?: boolean }
  | { algorithm: 'sliding-window-log'; id?: string; limit: number; window: Duration }
  | { algorithm: 'sliding-window-counter'; id?: string; limit: number; window: Duration }
  | { algorithm: 'token-bucket'; id?: string; capacity: number; refillRate: number; interval?: Duration; refill?: 'smooth' | 'interval' }
  | { algorithm: 'leaky-bucket'; id?: string; capacity: number; leakRate: number; interval?: Duration }
  | { algorithm: 'gcra'; id?: string; limit: number; period: Duration; burst?: number };

const FACTORIES: { readonly [A in AlgorithmName]: (options: never) => Rule } = {
  'fixed-window': fixedWindow,
  'sliding-window-log': slidingWindowLog,
  'sliding-window-counter': slidingWindowCounter,
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
  gcra,
};

/**
 * Builds a rule from its spec with the algorithm's own factory. Errors name `field` and what is accepted.
 * @example ruleFromSpec({ algorithm: 'gcra', id: 'api', limit: 10, period: '1s' }, 'rules[0]')
 */
export function ruleFromSpec(spec: unknown, field = 'rule'): Rule {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be an object such as { "algorithm": "gcra", "limit": 10, "period": "1s" }, got ${describe(spec)}`,
    );
  }
  const { algorithm, ...options } = spec as { algorithm?: unknown };
  if (typeof algorithm !== 'string' || !(ALGORITHM_NAMES as readonly string[]).includes(algorithm)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field}.algorithm must be one of ${ALGORITHM_NAMES.map((a) => `'${a}'`).join(', ')}, got ${describe(algorithm)}`,
    );
  }
  try {
    return FACTORIES[algorithm as AlgorithmName](options as never);
  } catch (error) {
    if (error instanceof SluiceError) throw new SluiceError(error.code, `${field}: ${error.detail}`, { cause: error });
    throw error;
  }
}

/** A rule's spec: what `ruleFromSpec` builds the same rule from (durations in milliseconds). */
export function ruleSpec(rule: Rule): RuleSpec {
  switch (rule.algorithm) {
    case 'fixed-window':
      return {
        algorithm: rule.algorithm,
        id: rule.id,
        limit: rule.params.limit,
        window: rule.params.windowMs,
        ...(rule.stagger ? { stagger: true } : {}),
      };
    case 'sliding-window-log':
    case 'sliding-window-counter':
      return { algorithm: rule.algorithm, id: rule.id, limit: rule.params.limit, window: rule.params.windowMs };
    case 'token-bucket':
      return {
        algorithm: rule.algorithm,
        id: rule.id,
        capacity: rule.params.capacity,
        refillRate: rule.params.refillRate,
        interval: rule.params.intervalMs,
        refill: rule.params.refill === 0 ? 'smooth' : 'interval',
      };
    case 'leaky-bucket':
      return {
        algorithm: rule.algorithm,
        id: rule.id,
        capacity: rule.params.capacity,
        leakRate: rule.params.leakRate,
        interval: rule.params.intervalMs,
      };
    case 'gcra':
      return { algorithm: rule.algorithm, id: rule.id, limit: rule.params.limit, period: rule.params.periodMs, burst: rule.params.burst };
  }
}
