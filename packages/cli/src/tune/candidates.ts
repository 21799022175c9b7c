/**
 * Candidate rules from the command line, built with core's own factories so a candidate is validated exactly as
 * a rule in code is. Two spellings, which may be mixed:
 * - `--rule ALGORITHM:LIMIT/WINDOW[:burst=N]`, repeated: `sliding-window-counter:100/1m`, `gcra:10/1s:burst=20`.
 *   For the buckets LIMIT/WINDOW is the refill rate and the capacity is `burst` (default: LIMIT).
 * - `--limits 50,100,200 --window 1m --algorithm fixed-window`: one candidate per limit.
 */
import {
  fixedWindow,
  gcra,
  leakyBucket,
  parseDuration,
  slidingWindowCounter,
  slidingWindowLog,
  SluiceError,
  tokenBucket,
  type AlgorithmName,
  type Rule,
} from '@sluice/core';

export interface Candidate {
  /** How the candidate is shown: `fixed-window:100/1m`. */
  readonly label: string;
  readonly rule: Rule;
  readonly algorithm: AlgorithmName;
  /** Requests per window (the refill rate per window for the buckets). */
  readonly limit: number;
  readonly windowMs: number;
}

const ALIASES: Record<string, AlgorithmName> = {
  'fixed-window': 'fixed-window',
  fw: 'fixed-window',
  'sliding-window-counter': 'sliding-window-counter',
  swc: 'sliding-window-counter',
  'sliding-window-log': 'sliding-window-log',
  swl: 'sliding-window-log',
  'token-bucket': 'token-bucket',
  tb: 'token-bucket',
  'leaky-bucket': 'leaky-bucket',
  lb: 'leaky-bucket',
  gcra: 'gcra',
};

const ACCEPTED = 'fixed-window (fw), sliding-window-counter (swc), sliding-window-log (swl), token-bucket (tb), leaky-bucket (lb), gcra';

/** The algorithm a name or alias stands for; `field` names the flag in the error. */
export function algorithmNamed(name: string, field: string): AlgorithmName {
  const algorithm = ALIASES[name.trim().toLowerCase()];
  if (algorithm === undefined) {
    throw new SluiceError('INVALID_OPTION', `${field} must be one of ${ACCEPTED}, got ${JSON.stringify(name)}`);
  }
  return algorithm;
}

/** Builds one candidate. `field` names the flag the values came from, for errors. */
export function candidate(algorithm: AlgorithmName, limit: number, window: string, burst: number | undefined, field: string): Candidate {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new SluiceError('INVALID_OPTION', `${field}: the limit must be a whole number of at least 1, got ${limit}`);
  }
  const windowMs = parseDuration(/^\d+$/.test(window) ? Number(window) : window, `${field}: window`);
  const capacity = burst ?? limit;
  const rule = buildRule(algorithm, limit, windowMs, capacity, burst);
  const label = `${algorithm}:${limit}/${formatDuration(windowMs)}${burst === undefined ? '' : `:burst=${burst}`}`;
  return { label, rule, algorithm, limit, windowMs };
}

function buildRule(algorithm: AlgorithmName, limit: number, windowMs: number, capacity: number, burst: number | undefined): Rule {
  switch (algorithm) {
    case 'fixed-window':
      return fixedWindow({ limit, window: windowMs });
    case 'sliding-window-counter':
      return slidingWindowCounter({ limit, window: windowMs });
    case 'sliding-window-log':
      return slidingWindowLog({ limit, window: windowMs });
    case 'token-bucket':
      return tokenBucket({ capacity, refillRate: limit, interval: windowMs });
    case 'leaky-bucket':
      return leakyBucket({ capacity, leakRate: limit, interval: windowMs });
    case 'gcra':
      return gcra(burst === undefined ? { limit, period: windowMs } : { limit, period: windowMs, burst });
  }
}

const RULE_SYNTAX = /^([a-z-]+):(\d+)\/([0-9a-z]+)(?::burst=(\d+))?$/i;

/** Parses `--rule ALGORITHM:LIMIT/WINDOW[:burst=N]`. */
export function parseRuleFlag(text: string): Candidate {
  const field = `--rule ${JSON.stringify(text)}`;
  const match = RULE_SYNTAX.exec(text.trim());
  if (match === null) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must look like ALGORITHM:LIMIT/WINDOW[:burst=N], e.g. sliding-window-counter:100/1m or gcra:10/1s:burst=20`,
    );
  }
  const [, name, limit, window, burst] = match;
  const algorithm = algorithmNamed(name!, field);
  if (burst !== undefined && algorithm !== 'token-bucket' && algorithm !== 'leaky-bucket' && algorithm !== 'gcra') {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field}: burst applies to token-bucket, leaky-bucket and gcra only; a window algorithm's burst is its limit`,
    );
  }
  return candidate(algorithm, Number(limit), window!, burst === undefined ? undefined : Number(burst), field);
}

/** Parses `--limits 50,100,200` with `--window` and `--algorithm` into one candidate per limit. */
export function parseLimitsFlag(text: string, window: string, algorithmName: string): Candidate[] {
  const algorithm = algorithmNamed(algorithmName, '--algorithm');
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0)
    throw new SluiceError(
      'INVALID_OPTION',
      `--limits must be a comma-separated list of whole numbers, e.g. 50,100,200, got ${JSON.stringify(text)}`,
    );
  return parts.map((part) => {
    if (!/^\d+$/.test(part)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `--limits must be a comma-separated list of whole numbers, e.g. 50,100,200; ${JSON.stringify(part)} is not one`,
      );
    }
    return candidate(algorithm, Number(part), window, undefined, `--limits ${part}`);
  });
}

/** `60000` as `1m`, `1500` as `1500ms`: the largest unit that divides it. */
export function formatDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  for (const [unit, size] of units) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}
