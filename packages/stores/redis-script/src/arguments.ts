import type { LimitRequest, LimitResult, ResolvedRule, RuleOutcome } from '@sluice/core/store';
import { SluiceError } from '@sluice/core';

/** A rule's spec, `code a b c`: the algorithm (with the token bucket's refill folded in) and three integers. */
const specs = new WeakMap<ResolvedRule, string>();
/** A rule set's spec entry, `#` + its rules' specs joined by ' '. Limiters pass the same rules array every time. */
const entries = new WeakMap<readonly ResolvedRule[], string>();

/** One rule as the script reads it: `code a b c` (see `specs`). Not core's `ruleSpec`, which is a rule as JSON. */
export function luaRuleArgument(rule: ResolvedRule): string {
  let spec = specs.get(rule);
  if (spec !== undefined) return spec;
  const p = rule.params as unknown as Record<string, unknown>;
  switch (rule.algorithm) {
    case 'fixed-window':
      spec = encode(rule, 'fw', p, ['limit', 'windowMs', 'offsetMs']);
      break;
    case 'sliding-window-log':
      spec = encode(rule, 'swl', p, ['limit', 'windowMs']);
      break;
    case 'sliding-window-counter':
      spec = encode(rule, 'swc', p, ['limit', 'windowMs']);
      break;
    case 'token-bucket':
      spec = encode(rule, p.refill === 1 ? 'tbi' : 'tbs', p, ['capacity', 'refillRate', 'intervalMs']);
      break;
    case 'leaky-bucket':
      spec = encode(rule, 'lb', p, ['capacity', 'leakRate', 'intervalMs']);
      break;
    case 'gcra':
      spec = encode(rule, 'gcra', p, ['limit', 'periodMs', 'burst']);
      break;
    default:
      throw new SluiceError('INVALID_OPTION', `unknown algorithm ${JSON.stringify((rule as { algorithm: unknown }).algorithm)}`);
  }
  specs.set(rule, spec);
  return spec;
}

/**
 * Core's rule factories validate every parameter; this re-checks what the script relies on (a rule built by hand
 * may not have gone through them), so a bad value fails here, alone, and never inside a script call that carries
 * other callers' decisions.
 */
function encode(rule: ResolvedRule, code: string, params: Record<string, unknown>, names: readonly string[]): string {
  let spec = code;
  for (let i = 0; i < 3; i++) {
    const name = names[i];
    const value = name === undefined ? 0 : params[name];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new SluiceError(
        'INVALID_OPTION',
        `rule ${JSON.stringify(rule.id)}: ${name} must be a non-negative safe integer, got ${String(value)}`,
      );
    }
    spec += ` ${value}`;
  }
  return spec;
}

/** The `#...` entry announcing a rule set. */
export function specEntry(rules: readonly ResolvedRule[]): string {
  let entry = entries.get(rules);
  if (entry !== undefined) return entry;
  if (rules.length === 0) throw new SluiceError('INVALID_OPTION', 'a limit request needs at least one rule');
  entry = `#${luaRuleArgument(rules[0]!)}`;
  for (let i = 1; i < rules.length; i++) entry += ` ${luaRuleArgument(rules[i]!)}`;
  entries.set(rules, entry);
  return entry;
}

/** One script call being written: KEYS, ARGV, and the spec and clock its last entries announced. */
export interface ScriptCallArguments {
  readonly clock: 'store' | 'client';
  readonly keys: string[];
  readonly args: string[];
  spec: string | undefined;
  now: number | undefined;
}

export function newCall(clock: 'store' | 'client'): ScriptCallArguments {
  return { clock, keys: [], args: [], spec: undefined, now: undefined };
}

/**
 * Appends one decision to a call: a spec entry when its rules differ from the previous decision's, a clock entry
 * (client clock only) when its now differs, then its keys and its cost entry. Throws, having appended nothing, on
 * a request the script cannot run.
 */
export function appendDecision(call: ScriptCallArguments, request: LimitRequest): void {
  const { key, rules, cost } = request;
  const spec = specEntry(rules);
  if (!Number.isSafeInteger(cost) || cost < 0)
    throw new SluiceError('INVALID_COST', `cost must be a non-negative integer, got ${String(cost)}`);
  const maxWaitMs = request.maxWaitMs ?? 0;
  if (request.operation === 'reserve' && (!Number.isSafeInteger(maxWaitMs) || maxWaitMs < 0)) {
    throw new SluiceError('INVALID_OPTION', `maxWaitMs must be a non-negative integer number of ms, got ${String(request.maxWaitMs)}`);
  }
  if (call.clock === 'client') {
    const now = request.now;
    if (!Number.isSafeInteger(now))
      throw new SluiceError('INVALID_OPTION', `the client clock must give integer epoch milliseconds, got ${String(now)}`);
    if (now !== call.now) {
      call.args.push(`@${now}`);
      call.now = now;
    }
  }
  if (spec !== call.spec) {
    call.args.push(spec);
    call.spec = spec;
  }
  call.args.push(costEntry(request));
  for (let i = 0; i < rules.length; i++) call.keys.push(`${key}:${rules[i]!.id}`);
}

/** A decision's cost entry: the cost (consume), or p / r / t + cost (peek, refund, take), or v + cost,maxWaitMs (reserve). */
function costEntry(request: LimitRequest): string {
  const { cost } = request;
  switch (request.operation) {
    case 'consume':
      return `${cost}`;
    case 'peek':
      return `p${cost}`;
    case 'refund':
      return `r${cost}`;
    case 'take':
      return `t${cost}`;
    case 'reserve':
      return `v${cost},${request.maxWaitMs ?? 0}`;
    default:
      throw new SluiceError('INVALID_OPTION', `unknown operation ${JSON.stringify((request as { operation: unknown }).operation)}`);
  }
}

/** A take or reserve decision's reply ends with one more integer: its granted or its startAt. */
const hasExtra = (request: LimitRequest): boolean => request.operation === 'take' || request.operation === 'reserve';

/** KEYS and ARGV of one script call deciding `requests` in order. */
export function encodeCall(requests: readonly LimitRequest[], clock: 'store' | 'client'): { keys: string[]; args: string[] } {
  const call = newCall(clock);
  for (const request of requests) appendDecision(call, request);
  return { keys: call.keys, args: call.args };
}

/**
 * Turns the script's flat integer reply into one result per request, in order; `now` is Redis TIME (the reply's
 * first value) with the store clock and each request's own with the client's. A reply of the wrong shape is a
 * STORE_ERROR for every request of the call (their outcomes cannot be told apart).
 */
export function parseCallReply(reply: unknown, requests: readonly LimitRequest[], clock: 'store' | 'client'): LimitResult[] {
  let expected = 1;
  for (const request of requests) expected += 4 * request.rules.length + (hasExtra(request) ? 1 : 0);
  if (!Array.isArray(reply) || reply.length !== expected) {
    throw new SluiceError('STORE_ERROR', `the limit script answered ${describeReply(reply)}, expected ${expected} integers`);
  }
  const storeNow = clock === 'store' ? integer(reply[0]) : 0;
  const results = new Array<LimitResult>(requests.length);
  let at = 1;
  for (let r = 0; r < requests.length; r++) {
    const request = requests[r]!;
    const rules = request.rules;
    const outcomes = new Array<RuleOutcome>(rules.length);
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      outcomes[i] = {
        id: rule.id,
        allowed: integer(reply[at]) === 1,
        limit: rule.limit,
        remaining: integer(reply[at + 1]),
        resetAt: integer(reply[at + 2]),
        retryAt: integer(reply[at + 3]),
      };
      at += 4;
    }
    if (hasExtra(request)) {
      // Granted (take) or startAt (reserve): the same on every rule of the decision (core's store/operations.ts).
      const extra = integer(reply[at]);
      at += 1;
      for (let i = 0; i < rules.length; i++) {
        const outcome = outcomes[i] as { granted?: number; startAt?: number };
        if (request.operation === 'take') outcome.granted = extra;
        else outcome.startAt = extra;
      }
    }
    results[r] = { now: clock === 'store' ? storeNow : request.now, outcomes };
  }
  return results;
}

/** Redis integers arrive as numbers (ioredis) or, through some REST clients, as decimal strings. */
function integer(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  const n = typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new SluiceError('STORE_ERROR', `the limit script answered a non-integer ${String(value)}`);
  return n;
}

function describeReply(reply: unknown): string {
  return Array.isArray(reply) ? `${reply.length} values` : typeof reply;
}
