import type { LimitRequest, LimitResult, ResolvedRule, RuleOutcome } from '@sluice/core';
import { SluiceError } from '@sluice/core';

/** Values per rule in ARGV: algorithm code, then four integer parameters (unused ones are 0). */
export const RULE_STRIDE = 5;

/** ARGV values that precede the rules: mode, cost, now. */
export const HEADER_LENGTH = 3;

const CODES = {
  'fixed-window': 'fw',
  'sliding-window-log': 'swl',
  'sliding-window-counter': 'swc',
  'token-bucket': 'tb',
  'leaky-bucket': 'lb',
  gcra: 'gcra',
} as const;

/** A rule's five ARGV values; rules are immutable, so each is encoded once. */
const encoded = new WeakMap<ResolvedRule, readonly (string | number)[]>();

export function ruleArguments(rule: ResolvedRule): readonly (string | number)[] {
  let args = encoded.get(rule);
  if (args !== undefined) return args;
  switch (rule.algorithm) {
    case 'fixed-window':
      args = [CODES[rule.algorithm], rule.params.limit, rule.params.windowMs, rule.params.offsetMs, 0];
      break;
    case 'sliding-window-log':
    case 'sliding-window-counter':
      args = [CODES[rule.algorithm], rule.params.limit, rule.params.windowMs, 0, 0];
      break;
    case 'token-bucket':
      args = [CODES[rule.algorithm], rule.params.capacity, rule.params.refillRate, rule.params.intervalMs, rule.params.refill];
      break;
    case 'leaky-bucket':
      args = [CODES[rule.algorithm], rule.params.capacity, rule.params.leakRate, rule.params.intervalMs, 0];
      break;
    case 'gcra':
      args = [CODES[rule.algorithm], rule.params.limit, rule.params.periodMs, rule.params.burst, 0];
      break;
    default:
      throw new SluiceError('INVALID_OPTION', `unknown algorithm ${JSON.stringify((rule as { algorithm: unknown }).algorithm)}`);
  }
  encoded.set(rule, args);
  return args;
}

/** The state key of each rule: `${key}:${rule.id}`. The base key's `{identity}` hash tag keeps them on one slot. */
export function scriptKeys(request: LimitRequest): string[] {
  const keys = new Array<string>(request.rules.length);
  for (let i = 0; i < request.rules.length; i++) keys[i] = `${request.key}:${request.rules[i]!.id}`;
  return keys;
}

/**
 * ARGV for LIMIT_SCRIPT. With `clock: 'store'` the time slot is '' and the script reads Redis TIME, so app
 * servers with skewed clocks agree; with `clock: 'client'` it carries `request.now`.
 */
export function scriptArguments(request: LimitRequest, clock: 'store' | 'client'): Array<string | number> {
  const args: Array<string | number> = [request.mode, request.cost, clock === 'store' ? '' : request.now];
  for (const rule of request.rules) args.push(...ruleArguments(rule));
  return args;
}

/** Turns the script's integer reply into the store contract's result; anything malformed is a STORE_ERROR. */
export function parseReply(reply: unknown, rules: readonly ResolvedRule[]): LimitResult {
  if (!Array.isArray(reply) || reply.length !== 2 + 4 * rules.length) {
    throw new SluiceError('STORE_ERROR', `the limit script answered ${describeReply(reply)}, expected ${2 + 4 * rules.length} integers`);
  }
  const outcomes = new Array<RuleOutcome>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const at = 2 + 4 * i;
    const rule = rules[i]!;
    outcomes[i] = {
      id: rule.id,
      allowed: integer(reply[at]) === 1,
      limit: rule.limit,
      remaining: integer(reply[at + 1]),
      resetAt: integer(reply[at + 2]),
      retryAt: integer(reply[at + 3]),
    };
  }
  return { now: integer(reply[0]), outcomes };
}

/** Redis integers arrive as numbers (ioredis) or, through some REST clients, as decimal strings. */
function integer(value: unknown): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new SluiceError('STORE_ERROR', `the limit script answered a non-integer ${String(value)}`);
  return n;
}

function describeReply(reply: unknown): string {
  return Array.isArray(reply) ? `${reply.length} values` : typeof reply;
}
