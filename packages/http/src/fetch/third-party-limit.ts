/**
 * The rules for a third party's limit as it states it ("50 requests per second"), for the throttled fetch. A third
 * party counts the requests that arrive in any window of its length (a sliding second, or its fixed seconds). A GCRA
 * rule with its default burst (= limit) lets `burst` go at once and then `limit` more within the same window: up to
 * burst + limit in the first window (a fleet on 49 per second sent 76 in one sliding second). These rules instead:
 * - a sliding window log of `requests` per (per + margin): any `requests + 1` bookings span at least per + margin,
 *   from the first: exact, on whole milliseconds, whatever came before;
 * - GCRA at the same rate with a burst of 2: the bookings are spread evenly (one every (per + margin) / requests on
 *   average, at most two at once after a quiet spell) instead of all at once. A burst of 1 would start each booking
 *   on the whole millisecond after the last one's end and lose the fraction: 21 ms apart for 20.7, 95% of the rate.
 *
 * The margin is for sends that reach the third party a little after their booked slot (a late timer, an event loop
 * busy elsewhere, the HTTP client's own work): a send late by d, followed by sends on time, puts the sends of
 * (per + margin − d) into one window. While no send is more than `margin` later than the ones after it, requests + 1
 * can never fall in one window; the throttled fetch books again a slot it woke for more than `LATE_SEND_MS` too late
 * (throttled-fetch.ts), which keeps what it can see of the lateness below that, and leaves the rest of the margin to
 * what happens after it hands the request to fetch.
 */
import { SluiceError, gcra, slidingWindowLog, type Duration, type Rule } from '@sluice/core';
import { describeValue as describe, durationOption, positiveInteger, requireObject, rejectUnknownOptions } from '@sluice/core/internal';

export interface ThirdPartyLimitOptions {
  /** The number of requests the third party allows per `per`, as it states it. */
  requests: number;
  /** The window it states them for (ms or a string like '1s'). */
  per: Duration;
  /**
   * Added to `per` (ms or a string like '100ms'), at most a tenth of `per`: how much later than the sends after it a
   * send may reach the third party and still never make `requests + 1` in one window. It costs
   * margin / (per + margin) of the allowance (9.1% of a second for the default).
   * @default '100ms', or a tenth of `per` when that is less
   */
  margin?: Duration;
  /** Names the rules' state in the store: `id` (the spacing) and `id:window` (the count). @default 'third-party' */
  id?: string;
}

/**
 * The default margin, in ms: the throttled fetch's re-booking tolerance (10 ms) and 90 ms for what follows it (a cold
 * connection, a process descheduled on a busy machine). 35 ms held on the outbound suite's cold fleet at low load
 * (the tightest 51 arrivals spanned 1004 to 1023 ms) but not in a full CI run, where one sliding second saw 51.
 */
export const DEFAULT_MARGIN_MS = 100;
/** The largest margin, as a share of `per` (a stated window matches a rule's window up to this much longer). */
export const MAX_MARGIN_SHARE = 0.1;

/**
 * Rules that keep the requests sent through them within a third party's stated limit in any window of its length,
 * from the first request, spread evenly: `requests` per (per + margin).
 * @example const limiter = createLimiter({ store, rules: thirdPartyLimit({ requests: 50, per: '1s' }), onStoreError: 'deny' });
 */
export function thirdPartyLimit(options: ThirdPartyLimitOptions): Rule[] {
  const read = requireObject(options, 'thirdPartyLimit');
  rejectUnknownOptions(read, ['requests', 'per', 'margin', 'id'], 'thirdPartyLimit');
  const requests = positiveInteger(options.requests, 'thirdPartyLimit: requests');
  const perMs = durationOption(options.per, 'thirdPartyLimit: per', { min: 1, max: 2 ** 40 });
  const maxMarginMs = Math.floor(perMs * MAX_MARGIN_SHARE);
  const marginMs =
    options.margin === undefined
      ? Math.min(DEFAULT_MARGIN_MS, maxMarginMs)
      : durationOption(options.margin, 'thirdPartyLimit: margin', { min: 0, max: maxMarginMs });
  if (options.id !== undefined && typeof options.id !== 'string') {
    throw new SluiceError('INVALID_OPTION', `thirdPartyLimit: id must be a string, got ${describe(options.id)}`);
  }
  const id = options.id ?? 'third-party';
  const windowMs = perMs + marginMs;
  return [
    gcra({ id, limit: requests, period: windowMs, burst: Math.min(2, requests) }),
    slidingWindowLog({ id: `${id}:window`, limit: requests, window: windowMs }),
  ];
}

/**
 * Whether a window a third party states (`w=1` in RateLimit-Policy) is the window of a rule whose own window is
 * `ruleWindowMs` (as learnableWindow reads it): the same, or longer by at most a tenth (thirdPartyLimit's margin).
 */
export function matchesStatedWindow(ruleWindowMs: number | undefined, statedMs: number): boolean {
  if (ruleWindowMs === undefined) return false;
  return ruleWindowMs >= statedMs && ruleWindowMs - statedMs <= Math.floor(statedMs * MAX_MARGIN_SHARE);
}
