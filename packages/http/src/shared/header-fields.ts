/**
 * Rate-limit response header fields in four dialects:
 *
 * - `draft-11` (default): draft-ietf-httpapi-ratelimit-headers-11, the latest (same shape since -08). Two
 *   structured-field Lists with one named Item per policy: `RateLimit-Policy: "api";q=100;w=60` and
 *   `RateLimit: "api";r=42;t=17`. Several limiters on one request append their items, in order.
 * - `draft-7`: `RateLimit: limit=100, remaining=42, reset=17` plus `RateLimit-Policy: 100;w=60`.
 * - `draft-6`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds) and `RateLimit-Policy`.
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Used` and `X-RateLimit-Reset`, where
 *   Reset is the Unix time in seconds at which to retry (GitHub's convention), or seconds from now by option.
 *
 * Time values are whole seconds rounded up, so a client that waits them is never early. The draft-7, draft-6 and
 * legacy forms describe one policy only: the one closest to refusing (the refusing one on a 429).
 *
 * The same fields come back on answers from other servers: `fieldMembers` reads them for the throttled fetch
 * (`@sluice/http/fetch`), so the one file that writes them also says how they are read.
 */
import type { Decision, RuleReport } from '@sluice/core';

export type HeaderStyle = 'draft-11' | 'draft-7' | 'draft-6' | 'legacy';
export const HEADER_STYLES: readonly HeaderStyle[] = ['draft-11', 'draft-7', 'draft-6', 'legacy'];

/** What `X-RateLimit-Reset` carries: Unix seconds (GitHub, most clients) or seconds from now (Twitter v1). */
export type LegacyReset = 'epoch-seconds' | 'delta-seconds';

/**
 * One response header and how it combines with a value already on the response (from an earlier sluice
 * middleware on the same request): `append` joins structured-field lists; `stricter` replaces its whole group
 * only when this one reports less room (`rank` is the remaining count, -1 for a refusal's, which always replaces;
 * `group` names the header holding the one already there); `max` keeps the longer Retry-After; `set` overwrites.
 */
export interface HeaderField {
  readonly name: string;
  readonly value: string;
  readonly merge: 'append' | 'stricter' | 'max' | 'set';
  readonly group?: string;
  readonly rank?: number;
}

/** One evaluated limiter, as the header writer sees it. */
export interface LimiterReport {
  /** The limiter's name, as its RateLimit-Policy item calls it. */
  readonly name: string;
  readonly decision: Decision;
}

/** Seconds, rounded up, from a millisecond span; never negative. */
export function ceilSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/** Milliseconds until this rule's answer changes: its retry time when it refuses, else until it is full again. */
function effectiveWindowMs(rule: RuleReport, now: number): number {
  if (!rule.allowed && rule.retryAt >= 0) return rule.retryAt - now;
  return rule.resetAt - now;
}

/** sf-string per RFC 8941 section 3.3.3: printable ASCII, with `"` and `\` escaped. Names are validated upstream. */
export function sfString(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

interface PolicyItem {
  readonly limit: number;
  readonly windowMs: number;
  /** The quoted item name. */
  readonly name: string;
  /** The whole RateLimit-Policy item. */
  readonly policy: string;
}

/**
 * Policy items are the same on every response, so a handler builds them once per limiter name and rule (in its
 * own cache, keyed by limiter name, then rule id), and rebuilds one only when the rule's limit or window changes
 * (configure(), per-identity quotas). Bounded by the configuration.
 */
export type PolicyItemCache = Map<string, Map<string, PolicyItem>>;

/** The item for one rule: named after the limiter alone for a one-rule limiter, `name/ruleId` for compound ones. */
function policyItem(cache: PolicyItemCache | undefined, limiterName: string, rule: RuleReport, single: boolean): PolicyItem {
  let byRule = cache?.get(limiterName);
  if (byRule === undefined) {
    byRule = new Map();
    cache?.set(limiterName, byRule);
  }
  const ruleKey = single ? '' : rule.id;
  let item = byRule.get(ruleKey);
  if (item === undefined || item.limit !== rule.limit || item.windowMs !== rule.windowMs) {
    const name = sfString(single ? limiterName : `${limiterName}/${rule.id}`);
    item = {
      limit: rule.limit,
      windowMs: rule.windowMs,
      name,
      policy: `${name};q=${rule.limit};w=${Math.max(1, ceilSeconds(rule.windowMs))}`,
    };
    byRule.set(ruleKey, item);
  }
  return item;
}

/** How `rateLimitFields` writes. */
export interface RateLimitFieldsOptions {
  readonly styles: readonly HeaderStyle[];
  readonly legacyReset: LegacyReset;
  /**
   * The response's Retry-After in seconds, on a refusal. Every time value is capped at it: the draft says
   * Retry-After SHOULD NOT reference a point earlier than the end of any effective window, and a rule that still
   * has room (a day quota next to a refusing burst rule) would otherwise report its whole window. Within the
   * shorter time the client still can use no more than `r`, so the item stays true.
   */
  readonly maxWindowSeconds?: number;
}

/** `RateLimitFieldsOptions` as a handler passes them: with its own cache of policy items (not exported). */
export interface CachedFieldsOptions extends RateLimitFieldsOptions {
  readonly policyItems: PolicyItemCache;
}

/** Seconds (rounded up) in a time value, capped at the response's Retry-After. */
function seconds(ms: number, maxWindowSeconds: number): number {
  return Math.min(ceilSeconds(ms), maxWindowSeconds);
}

/** Header fields for the evaluated limiters; `decider` is the index of the one that speaks for the request. */
export function rateLimitFields(reports: readonly LimiterReport[], decider: number, options: RateLimitFieldsOptions): HeaderField[] {
  const cache = (options as Partial<CachedFieldsOptions>).policyItems;
  const { styles, legacyReset } = options;
  const maxWindowSeconds = options.maxWindowSeconds ?? Number.POSITIVE_INFINITY;
  const fields: HeaderField[] = [];
  for (const style of styles) {
    if (style === 'draft-11') {
      let policies = '';
      let limits = '';
      for (const report of reports) {
        const now = report.decision.now;
        const single = report.decision.rules.length === 1;
        for (const rule of report.decision.rules) {
          const item = policyItem(cache, report.name, rule, single);
          policies = policies === '' ? item.policy : `${policies}, ${item.policy}`;
          const limit = `${item.name};r=${rule.remaining};t=${seconds(effectiveWindowMs(rule, now), maxWindowSeconds)}`;
          limits = limits === '' ? limit : `${limits}, ${limit}`;
        }
      }
      if (policies !== '') {
        fields.push({ name: 'RateLimit-Policy', value: policies, merge: 'append' });
        fields.push({ name: 'RateLimit', value: limits, merge: 'append' });
      }
      continue;
    }
    const report = reports[decider];
    if (report === undefined || report.decision.rules.length === 0) continue;
    const { decision } = report;
    const rule = decision.rules.find((r) => r.id === decision.rule) ?? decision.rules[0]!;
    const waitMs = Math.min(effectiveWindowMs(rule, decision.now), maxWindowSeconds * 1000);
    const policy = decision.rules.map((r) => `${r.limit};w=${Math.max(1, ceilSeconds(r.windowMs))}`).join(', ');
    // A refusal speaks for its response: its group replaces what an earlier sluice middleware wrote, whatever that
    // one had left (a remaining count is never below 0), so the reset sent is the refusal's, capped at Retry-After.
    const rank = options.maxWindowSeconds === undefined ? rule.remaining : -1;
    if (style === 'draft-7') {
      fields.push({
        name: 'RateLimit',
        value: `limit=${rule.limit}, remaining=${rule.remaining}, reset=${seconds(waitMs, maxWindowSeconds)}`,
        merge: 'stricter',
        group: 'RateLimit',
        rank,
      });
      fields.push({ name: 'RateLimit-Policy', value: policy, merge: 'stricter', group: 'RateLimit', rank });
    } else if (style === 'draft-6') {
      const group = 'RateLimit-Remaining';
      fields.push({ name: 'RateLimit-Limit', value: String(rule.limit), merge: 'stricter', group, rank });
      fields.push({ name: 'RateLimit-Remaining', value: String(rule.remaining), merge: 'stricter', group, rank });
      fields.push({ name: 'RateLimit-Reset', value: String(seconds(waitMs, maxWindowSeconds)), merge: 'stricter', group, rank });
      fields.push({ name: 'RateLimit-Policy', value: policy, merge: 'stricter', group, rank });
    } else {
      const group = 'X-RateLimit-Remaining';
      const reset =
        legacyReset === 'delta-seconds' ? seconds(waitMs, maxWindowSeconds) : Math.ceil((decision.now + Math.max(0, waitMs)) / 1000);
      fields.push({ name: 'X-RateLimit-Limit', value: String(rule.limit), merge: 'stricter', group, rank });
      fields.push({ name: 'X-RateLimit-Remaining', value: String(rule.remaining), merge: 'stricter', group, rank });
      fields.push({ name: 'X-RateLimit-Used', value: String(rule.limit - rule.remaining), merge: 'stricter', group, rank });
      fields.push({ name: 'X-RateLimit-Reset', value: String(reset), merge: 'stricter', group, rank });
    }
  }
  return fields;
}

/** Where header fields are written: a Node response, a Fastify reply or web `Headers`, behind two functions. */
export interface HeaderTarget {
  get(name: string): string | undefined;
  set(name: string, value: string): void;
}

/**
 * A Node-style response as a header target: `getHeader` answers a string, a number or a list (joined with `, `
 * as HTTP list syntax defines), `set` writes one field. Express's `res` and Fastify's `reply` both fit.
 */
export function nodeHeaderTarget(getHeader: (name: string) => unknown, set: (name: string, value: string) => void): HeaderTarget {
  return {
    get(name) {
      const value = getHeader(name);
      if (value === undefined) return undefined;
      return Array.isArray(value) ? value.join(', ') : String(value);
    },
    set,
  };
}

/**
 * Writes fields onto a response, combining with values an earlier sluice middleware left there (see
 * `HeaderField.merge`). Each `stricter` group is decided once, from the header named by `group`.
 *
 * A response that carries Retry-After (a refusal) agrees with it: every `t` of the draft-11 `RateLimit` items on it,
 * those an earlier middleware wrote included, is capped at the Retry-After seconds, and a `stricter` group already
 * written by the refusal is not replaced (the refusal's own fields are capped when built). Only refusals and stacked
 * middlewares pay for this: a response written by one middleware that lets the request through is not read back.
 */
export function writeHeaders(fields: readonly HeaderField[], target: HeaderTarget): void {
  let skipGroups: Set<string> | undefined;
  let checked: Set<string> | undefined;
  // RateLimit items joined to items already on the response, or a Retry-After written: the `t` values need capping.
  let capWindows = false;
  for (const field of fields) {
    if (field.name === 'Retry-After') capWindows = true;
    const existing = target.get(field.name);
    if (existing === undefined || existing === '') {
      if (field.merge !== 'stricter') {
        target.set(field.name, field.value);
        continue;
      }
    }
    switch (field.merge) {
      case 'append':
        target.set(field.name, `${existing}, ${field.value}`);
        if (field.name === 'RateLimit') capWindows = true;
        break;
      case 'max':
        if (!(Number(existing) >= Number(field.value))) target.set(field.name, field.value);
        break;
      case 'set':
        target.set(field.name, field.value);
        break;
      case 'stricter': {
        const group = field.group ?? field.name;
        checked ??= new Set();
        if (!checked.has(group)) {
          checked.add(group);
          const held = remainingIn(target.get(group));
          const rank = field.rank ?? 0;
          // Fields of an allowed limiter never replace those of a refusal already on the response (Next's
          // `withRateLimitHeaders(api, toNextResponse(login))`): the refusal's are the ones capped at its Retry-After.
          if (held !== undefined && (held <= rank || (rank >= 0 && target.get('Retry-After') !== undefined))) {
            (skipGroups ??= new Set()).add(group);
          }
        }
        if (!skipGroups?.has(group)) target.set(field.name, field.value);
        break;
      }
    }
  }
  if (capWindows) capRateLimitWindows(target);
}

/** Caps the `t` of every `RateLimit` item on the response at its Retry-After in seconds, when it has both. */
function capRateLimitWindows(target: HeaderTarget): void {
  const retryAfter = target.get('Retry-After');
  // Retry-After may also be an HTTP date (a route's own), which says nothing in seconds to cap at.
  if (retryAfter === undefined || !/^\s*\d+\s*$/.test(retryAfter)) return;
  const list = target.get('RateLimit');
  if (list === undefined || list === '') return;
  const capped = capWindowParams(list, Number(retryAfter));
  if (capped !== list) target.set('RateLimit', capped);
}

/**
 * A draft-11 `RateLimit` list with every integer `t` parameter above `maxSeconds` lowered to it, the rest of the
 * text untouched; the same string when nothing is above. Quoted item names are skipped over (with their `\"` and
 * `\\` escapes), so a `;t=` inside a name is not taken for a parameter.
 */
export function capWindowParams(list: string, maxSeconds: number): string {
  // A quoted name (escapes included) is matched whole and left as it is; `; t=<digits>` ending at the next
  // parameter, item or the end of the field is a `t` to cap.
  return list.replace(/"(?:[^"\\]|\\.)*"|; *t=(\d+)(?=[;, \t]|$)/g, (match: string, t: string | undefined) =>
    t !== undefined && Number(t) > maxSeconds ? `${match.slice(0, match.length - t.length)}${maxSeconds}` : match,
  );
}

/** The remaining count in a header already on the response: a bare integer, or draft-7's `remaining=N`. */
function remainingIn(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const match = /(?:^|[\s,;])remaining=(\d+)/.exec(value) ?? /^\s*(\d+)\s*$/.exec(value);
  return match === null ? undefined : Number(match[1]);
}

/**
 * One member of a `RateLimit` or `RateLimit-Policy` field another server sent, in either draft: a List item
 * (`"api";r=0;t=5`, `10;w=1`) is `{ value: '"api"', params }`; a Dictionary member (draft-7's `remaining=0`) also
 * has its `key`. Keys and parameter names are lowercased.
 */
export interface FieldMember {
  readonly key?: string;
  readonly value: string;
  readonly params: ReadonlyMap<string, string>;
}

/**
 * The members of such a field, read leniently (a third party's header is data, not a contract): split at commas,
 * then at semicolons, with no quoted comma or semicolon expected inside a policy name.
 */
export function fieldMembers(field: string): FieldMember[] {
  return field.split(',').map((member) => {
    const [head = '', ...rest] = member.split(';').map((part) => part.trim());
    const params = new Map<string, string>();
    for (const part of rest) {
      const eq = part.indexOf('=');
      if (eq > 0) params.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
    }
    const eq = head.startsWith('"') ? -1 : head.indexOf('=');
    return eq > 0 ? { key: head.slice(0, eq).trim().toLowerCase(), value: head.slice(eq + 1).trim(), params } : { value: head, params };
  });
}
