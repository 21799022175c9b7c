/**
 * Calling a third party that allows N requests per second across all workers (the article 'Rate limiting with
 * Redis'): a fetch that waits for its slot (`limiter.wait`: one `reserve` in the shared store, then a sleep, no
 * polling) and learns from the third party's answers. A 429 or 503 with `Retry-After`, or a `RateLimit` /
 * `X-RateLimit-*` answer that says nothing is left, pushes the SHARED queue back (`pushBack`), so every worker slows
 * down, not only the one told; and the limit the third party states (or a bare 429) moves the rules (`learn`): this
 * process's (learn-limit.ts), or, with `learn: { source }`, the fleet's, held in the shared store
 * (shared-limit-learner.ts).
 * Edge-safe: no Node imports; URL and fetch are read from globalThis.
 */
import { SluiceError, type Decision, type Duration, type Limiter } from '@sluice/core';
import type { AbortSignalLike } from '@sluice/core/concurrency';
import type { ConfigSource } from '@sluice/core/config';
import {
  describeValue as describe,
  durationOption,
  type DurationRange,
  optionalFunction,
  optionNames,
  rejectUnknownOptions,
  timerDuration,
} from '@sluice/core/internal';
import type { ResponseLike } from './types.js';
import { fieldMembers } from '../shared/header-fields.js';
import { LimitLearner } from './learn-limit.js';
import { SharedLimitLearner } from './shared-limit-learner.js';
import { aborted, sleep } from './sleep.js';
import { StoreClock } from './store-clock.js';

export type { ResponseLike } from './types.js';

/** The parts of a URL the `key` option reads (the global URL class has them all). */
export interface UrlLike {
  readonly href: string;
  readonly origin: string;
  readonly protocol: string;
  readonly host: string;
  readonly hostname: string;
  readonly port: string;
  readonly pathname: string;
}

/** Any fetch-compatible function: the global fetch, undici's, a test double. */
export type FetchLike = (input: never, init?: never) => Promise<ResponseLike>;

export interface ThrottledFetchOptions<F extends FetchLike = FetchLike> {
  /** The limiter holding the third party's rate, on a store shared by every worker (one that runs `reserve`). */
  limiter: Limiter;
  /** Longest wait for a slot (ms or a string like '30s'); a later slot rejects with WAIT_TOO_LONG, nothing sent. */
  maxWait: Duration;
  /** The limiter identity of a request. @default the URL's host (`api.example.com:8443`) */
  key?(url: UrlLike): string;
  /** The fetch to call. @default globalThis.fetch, read at each call */
  fetch?: F;
  /** Times a 429/503 answer is sent again, after waiting for a slot behind the push back. @default 0 */
  retries?: number;
  /**
   * Follow the third party's limit: a stated limit (`RateLimit-Policy`, `RateLimit`, `X-RateLimit-Limit`) sets the
   * limiter's rule of that window to it, never above the rule written. `true`: this process alone learns, and a
   * 429 that states no limit cuts its rules by a quarter, climbing back after ten quiet windows (learn-limit.ts);
   * it reconfigures `limiter` in this process: give each third party its own limiter. `{ source }`: the fleet
   * learns together, through the limiter's runtime configuration in the shared store (the identity's quota): a
   * bare 429 halves the limit for every worker, once per window fleet-wide (shared-limit-learner.ts). @default true
   * @example learn: { source: redisConfigSource(redis) }
   */
  learn?: boolean | SharedLearnOptions;
}

export interface SharedLearnOptions {
  /** Where the fleet keeps what it learns: a config source on the store every worker shares (it must have `replace`). */
  source: ConfigSource;
  /** How often, at most, a worker reads the stored limit while its requests flow (ms or a string like '1s'): how soon a worker follows another's cut when no push reaches it. @default '250ms' */
  refresh?: Duration;
}

const KNOWN = optionNames<ThrottledFetchOptions>({ limiter: true, maxWait: true, key: true, fetch: true, retries: true, learn: true });
const LEARN_OPTIONS = optionNames<SharedLearnOptions>({ source: true, refresh: true });
/** The limiter's own bound on a wait: its latest clock reading, 2^47 ms (about the year 6429). */
const MAX_WAIT_RANGE: DurationRange = { min: 0, max: 2 ** 47 };
/**
 * A send that would leave more than this after its booked slot is not sent on it: the slot is left empty and the
 * request books again. Below thirdPartyLimit's default margin (100 ms), which also has to cover the time between
 * handing the request to fetch and its arrival.
 */
export const LATE_SEND_MS = 10;
/** Slots missed in a row before a request gives up with WAIT_TOO_LONG (each one booked and left empty). */
export const MAX_MISSED_SLOTS = 8;
/** A push back books at most this many slots (a Retry-After of hours on a per-second rule is not booked to its end). */
export const MAX_PUSH_BACK_BOOKINGS = 100;
/** An `X-RateLimit-Reset` this large is an epoch time in seconds, not a delay (one year of seconds). */
const EPOCH_SECONDS_FROM = 365 * 24 * 3600;

const global = globalThis as unknown as {
  URL: new (input: string) => UrlLike;
  fetch?: (input: unknown, init?: unknown) => Promise<ResponseLike>;
  Request?: new (input: unknown, init?: unknown) => { clone(): unknown };
};

/**
 * Pushes the shared queue of `identity` back so that its next slot starts at least `delay` from now (the store's
 * now): books slots with `reserve`, each of the smallest capacity over the limiter's rules, until the next free
 * slot lies beyond now + delay (at most 100 bookings). Every worker waiting on
 * the same store then queues behind the bookings. Idempotent enough for a fleet: a second worker pushing back by the
 * same delay finds the queue already there and books nothing (each booking's maxWait is what is left of the delay).
 *
 * These bookings are real consumption: with several rules (20 per second and 50 000 per day), the slots booked to
 * hold the short rule back also spend the longer rules' quota. Resolves with the number of slots booked.
 * @example await pushBack(limiter, 'api.example.com', '30s');
 */
export async function pushBack(limiter: Limiter, identity: string, delay: Duration): Promise<number> {
  const delayMs = durationOption(delay, 'pushBack: delay', MAX_WAIT_RANGE);
  const cost = Math.min(...(limiter.quotas.get(identity) ?? limiter.rules).map((rule) => rule.limit));
  let target: number | undefined;
  let maxWait = delayMs;
  for (let booked = 0; booked < MAX_PUSH_BACK_BOOKINGS; booked++) {
    const decision: Decision = await limiter.reserve(identity, { cost, maxWait });
    // Denied: the next free slot already starts beyond the target; degraded: the store is not there to book in.
    if (!decision.allowed || decision.degraded || decision.startAt === undefined) return booked;
    target ??= decision.now + delayMs;
    if (decision.startAt >= target) return booked + 1;
    maxWait = Math.max(0, target - decision.now);
  }
  return MAX_PUSH_BACK_BOOKINGS;
}

/**
 * How long the third party asks everyone to hold off, in ms, read from a response's headers; undefined when it
 * does not say. Read, in order: `Retry-After` (seconds or an HTTP date) on a 429 or 503; the `RateLimit` header
 * (draft-ietf items `"name";r=0;t=5`, or `limit=10, remaining=0, reset=5`) with nothing remaining; `RateLimit-Remaining: 0`
 * or `X-RateLimit-Remaining: 0` with their `-Reset` (seconds, or epoch seconds when large). `now` is epoch ms.
 */
export function holdOffMs(response: ResponseLike, now: number): number | undefined {
  const headers = response.headers;
  if (response.status === 429 || response.status === 503) {
    const retryAfter = parseRetryAfter(headers.get('retry-after'), now);
    if (retryAfter !== undefined) return retryAfter;
  }
  const structured = parseRateLimit(headers.get('ratelimit'));
  if (structured !== undefined) return structured;
  for (const prefix of ['ratelimit', 'x-ratelimit']) {
    const remaining = headers.get(`${prefix}-remaining`);
    if (remaining === null || Number(remaining.trim()) !== 0 || remaining.trim() === '') continue;
    const reset = parseSeconds(headers.get(`${prefix}-reset`));
    if (reset !== undefined) return reset >= EPOCH_SECONDS_FROM ? Math.max(0, reset * 1000 - now) : reset * 1000;
  }
  return undefined;
}

/** `Retry-After`: delay-seconds or an HTTP date, in ms from `now`. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const seconds = parseSeconds(value);
  if (seconds !== undefined) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The `RateLimit` header, both drafts: structured items (`"default";r=0;t=5, "daily";r=10;t=3600`) and the older
 * dictionary (`limit=10, remaining=0, reset=5`). The longest reset among the policies with nothing left, in ms.
 */
export function parseRateLimit(value: string | null): number | undefined {
  if (value === null) return undefined;
  let hold: number | undefined;
  const dictionary = new Map<string, string>();
  for (const member of fieldMembers(value)) {
    // A structured item; one without its name (`r=0;t=5`) reads as the member `r` and is taken as one too.
    const remaining = member.params.get('r') ?? (member.key === 'r' ? member.value : undefined);
    if (remaining !== undefined) {
      const reset = parseSeconds(member.params.get('t') ?? null);
      if (parseSeconds(remaining) === 0 && reset !== undefined) hold = Math.max(hold ?? 0, reset * 1000);
    } else if (member.key !== undefined) {
      dictionary.set(member.key, member.value);
    }
  }
  if (dictionary.has('remaining')) {
    const remaining = parseSeconds(dictionary.get('remaining')!);
    const reset = parseSeconds(dictionary.get('reset') ?? null);
    if (remaining === 0 && reset !== undefined) hold = Math.max(hold ?? 0, reset * 1000);
  }
  return hold;
}

/** A non-negative decimal number of seconds (or units), else undefined. */
function parseSeconds(value: string | null): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  return /^\d+(?:\.\d+)?$/.test(trimmed) ? Number(trimmed) : undefined;
}

/**
 * A fetch that waits for a slot of `limiter` before each request and pushes the shared queue back when the third
 * party says to hold off (`Retry-After`, `RateLimit`, `X-RateLimit-*`; see {@link pushBack}); the answer is returned as it came (a 429 is
 * not sent again unless `retries` says so). The request's own `signal` also aborts its wait.
 * @example const fetchApi = createThrottledFetch({ limiter, maxWait: '30s' }); const res = await fetchApi('https://api.example.com/v1/items');
 */
export function createThrottledFetch<F extends FetchLike = FetchLike>(options: ThrottledFetchOptions<F>): F {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError(
      'INVALID_OPTION',
      `createThrottledFetch: options must be an object such as { limiter, maxWait: '30s' }, got ${describe(options)}`,
    );
  }
  rejectUnknownOptions(options, KNOWN, 'createThrottledFetch');
  const { limiter } = options;
  if (typeof limiter !== 'object' || limiter === null || typeof limiter.wait !== 'function' || typeof limiter.reserve !== 'function') {
    throw new SluiceError(
      'INVALID_OPTION',
      `createThrottledFetch: limiter must be a limiter from createLimiter(), got ${describe(limiter)}`,
    );
  }
  const maxWaitMs = durationOption(options.maxWait, 'createThrottledFetch: maxWait', MAX_WAIT_RANGE);
  const key = optionalFunction(options.key, 'createThrottledFetch: key', '(url) => string') ?? ((url: UrlLike) => url.host);
  const send = optionalFunction(
    options.fetch as unknown as ((input: unknown, init?: unknown) => Promise<ResponseLike>) | undefined,
    'createThrottledFetch: fetch',
    '(input, init) => Promise<Response>',
  );
  const retries = options.retries ?? 0;
  if (typeof retries !== 'number' || !Number.isSafeInteger(retries) || retries < 0) {
    throw new SluiceError('INVALID_OPTION', `createThrottledFetch: retries must be a whole number from 0, got ${describe(retries)}`);
  }
  const shared = sharedLearner(limiter, options.learn);
  const learner =
    options.learn === false || shared !== undefined ? undefined : new LimitLearner(limiter.rules, (rules) => limiter.configure({ rules }));

  // Node loads its HTTP client (undici) on the first use of fetch, Request or Response: 20 to 60 ms of one thread
  // on an idle machine, several times that while other processes start too. Loaded by the first send, it would hold
  // that send and every slot of this process due meanwhile; loaded now, it holds nothing.
  if (send === undefined) void global.Request;
  const storeClock = new StoreClock();
  let firstAnswer: Promise<void> | undefined;
  let answered = false;
  /**
   * Resolves when this process may send to `identity`: at its booked slot on this process's clock (store-clock.ts:
   * never before it, and not later by the time a reply sat unread), and no later than LATE_SEND_MS after it. A slot
   * woken for too late (a late timer, a busy event loop) is not used: sent then, it would bunch with the slots booked
   * after it. It is left empty and the request books again, within what is left of maxWait; so is a slot booked
   * before the fleet lowered the limit (once), closer to the one before it than the new limit allows. The whole wait
   * stays within maxWait, clamped both ways (a wall clock stepped back during a wait must not grant more).
   */
  const waitToSend = async (identity: string, signal: AbortSignalLike | undefined): Promise<void> => {
    if (signal !== undefined && typeof signal.addEventListener !== 'function') {
      throw new SluiceError('INVALID_OPTION', `createThrottledFetch: a request's signal must be an AbortSignal, got ${describe(signal)}`);
    }
    const started = Date.now();
    // Before the first booking, one read of the store's clock (a peek: nothing booked). It is also the call that
    // loads the store's script and opens its connection: a booking made cold would wait for its reply.
    // The fleet's learner reads the stored limit then too, so its first read is not done while a send is due.
    if (!storeClock.known) await Promise.all([observe(() => limiter.peek(identity)).catch(() => undefined), shared?.prime(identity)]);
    let afterCut = false;
    for (let missed = 0; ;) {
      if (signal?.aborted === true) throw aborted();
      const left = Math.min(maxWaitMs, Math.max(0, maxWaitMs - (Date.now() - started)));
      const ticket = shared?.ticket(identity);
      let decision = await observe(() => limiter.reserve(identity, { maxWait: left }));
      const read = Date.now();
      if (!decision.allowed) {
        // Refused (too far, never, the store down): the limiter's own wait books again and says why, or waits.
        decision = await limiter.wait(identity, signal === undefined ? { maxWait: left } : { maxWait: left, signal });
      } else if (!decision.degraded) {
        // Until the slot on the store clock's estimate, or its wait counted from the reply's reading, whichever
        // comes first: both are at or after the slot, and the second holds when the local clock was stepped.
        const start = decision.startAt ?? decision.now;
        const delay = Math.min(storeClock.latest(start)! - Date.now(), start - decision.now - (Date.now() - read));
        await sleep(delay, signal).catch(async (error: unknown) => {
          // Aborted: the booking is given back where the rules allow it, as the limiter's wait does.
          if (limiter.rules.every((rule) => REFUNDABLE.has(rule.algorithm))) await limiter.refund(identity).catch(() => undefined);
          throw error;
        });
      }
      if (ticket !== undefined && !afterCut && shared!.loweredSince(identity, ticket)) {
        afterCut = true;
        continue;
      }
      // A degraded answer has no slot to miss.
      const slot = decision.degraded ? undefined : storeClock.earliest(decision.startAt ?? decision.now);
      const late = slot === undefined ? 0 : Date.now() - slot;
      if (late <= LATE_SEND_MS) return;
      if (++missed >= MAX_MISSED_SLOTS) {
        throw new SluiceError(
          'WAIT_TOO_LONG',
          `createThrottledFetch: ${missed} slots in a row for "${identity}" were woken for more than ${LATE_SEND_MS} ms late (the last by ${late} ms): this process cannot send on time (a busy event loop or a slow store); nothing was sent`,
        );
      }
    }
  };
  /** Runs a store call and feeds its answer's time to the store clock (degraded answers carry the local clock). */
  const observe = async (call: () => Promise<Decision>): Promise<Decision> => {
    const asked = Date.now();
    const decision = await call();
    if (!decision.degraded) storeClock.observe(decision.now, asked, Date.now());
    return decision;
  };

  const throttled = async (input: unknown, init?: unknown): Promise<ResponseLike> => {
    const fetchImpl = send ?? global.fetch;
    if (typeof fetchImpl !== 'function')
      throw new SluiceError('INVALID_OPTION', 'createThrottledFetch: no global fetch in this runtime; pass the fetch option');
    const href =
      typeof input === 'string'
        ? input
        : typeof input === 'object' && input !== null && 'url' in input
          ? String((input as { url: unknown }).url)
          : String(input);
    const identity = key(new global.URL(href));
    const signal = readSignal(init) ?? readSignal(input);
    // A request sent more than once needs its body again: clone a Request built once from input and init.
    const original = retries > 0 && global.Request !== undefined ? new global.Request(input, init) : undefined;
    // The first request this throttled fetch sends runs the HTTP client's request and answer code for the first time
    // (compiled then: milliseconds of the event loop, more on a busy machine) and opens a connection. Booked beside
    // it, the other requests' slots would pass meanwhile: they book once its answer is in (or it failed).
    let opened: (() => void) | undefined;
    if (firstAnswer === undefined)
      firstAnswer = new Promise<void>((resolve) => {
        opened = () => {
          answered = true;
          resolve();
        };
      });
    else if (!answered) await firstAnswer;
    for (let attempt = 0; ; attempt++) {
      await waitToSend(identity, signal).catch((error: unknown) => {
        opened?.();
        throw error;
      });
      const sentAt = Date.now();
      const ticket = shared?.ticket(identity);
      const response = await (original === undefined ? fetchImpl(input, init) : fetchImpl(original.clone())).finally(() => opened?.());
      learner?.observe(response, sentAt, Date.now());
      if (shared !== undefined) await shared.observe(identity, response, ticket!);
      const hold = holdOffMs(response, Date.now());
      // The answer is the caller's even if the store cannot book the push back now (its next wait will say so).
      if (hold !== undefined && hold > 0) await pushBack(limiter, identity, Math.ceil(hold)).catch(() => undefined);
      const refused = response.status === 429 || response.status === 503;
      if (!refused || attempt >= retries) return response;
      await (response as { body?: { cancel?(): Promise<void> } | null }).body?.cancel?.().catch(() => undefined);
    }
  };
  return throttled as unknown as F;
}

/** The fleet's learner for `learn: { source }`; undefined for `true`, `false` or left out. */
function sharedLearner(limiter: Limiter, learn: unknown): SharedLimitLearner | undefined {
  if (learn === undefined || typeof learn === 'boolean') return undefined;
  if (typeof learn !== 'object' || learn === null) {
    throw new SluiceError(
      'INVALID_OPTION',
      `createThrottledFetch: learn must be true, false or { source } (a config source shared by the fleet), got ${describe(learn)}`,
    );
  }
  rejectUnknownOptions(learn, LEARN_OPTIONS, 'createThrottledFetch: learn');
  const { source, refresh } = learn as Partial<SharedLearnOptions>;
  const candidate = source as Partial<ConfigSource> | null | undefined;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.read !== 'function' ||
    typeof candidate.replace !== 'function'
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `createThrottledFetch: learn.source must be a config source with read and replace (compare and set), such as redisConfigSource(redis), got ${describe(source)}`,
    );
  }
  const refreshMs = timerDuration(refresh ?? '250ms', 'createThrottledFetch: learn.refresh', 10);
  return new SharedLimitLearner(limiter, candidate as ConfigSource, refreshMs);
}

function readSignal(value: unknown): AbortSignalLike | undefined {
  if (typeof value !== 'object' || value === null || !('signal' in value)) return undefined;
  const signal = (value as { signal: unknown }).signal;
  return typeof signal === 'object' && signal !== null ? (signal as AbortSignalLike) : undefined;
}

/** Algorithms whose refund gives a booked slot back to the next caller (as the limiter's wait refunds). */
const REFUNDABLE = new Set(['token-bucket', 'leaky-bucket', 'gcra']);
