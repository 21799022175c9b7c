/**
 * The layers after the request rate in the article 'Scaling your API with rate limiters' (concurrency 429, fleet
 * usage 503, worker utilization 503), consulted in the article's order for one request, written once for every
 * framework adapter (Express, Fastify, Hono, Next): checking the stack's options, running the layers, holding
 * their leases and the refusal's status, headers and body. An adapter runs its rate layer first, then
 * `runStackLayers`, and only ties the leases to its response's end and writes the refusal its framework's way.
 */
import { SluiceError } from '@sluice/core';
import type { AcquireOptions, ConcurrencyLimiter, Lease } from '@sluice/core/concurrency';
import type { FleetShedder, UtilizationShedder } from '@sluice/core/shedding';
import { optionalFunction, rejectUnknownOptions } from '@sluice/core/internal';
import type { HeaderField } from '../shared/header-fields.js';
import { PROBLEM_CONTENT_TYPE, problemFor, type RefusalKind } from '../handler/problem.js';

/** The four layers, in the order the stacks consult them. */
export type StackLayer = 'rate' | 'concurrency' | 'fleet' | 'worker';

export interface StackLayers<R> {
  /** Requests in flight per client (429); the lease is held until the response ends, however it ends. */
  concurrency?: {
    limiter: ConcurrencyLimiter;
    /** The client. Default: the identity the rate layer resolved. */
    identify?: (request: R) => string | undefined;
  };
  /** Fleet-wide in-flight work with a reserve for critical classes (503). */
  fleet?: FleetShedder;
  /** This process's utilization (503). */
  worker?: UtilizationShedder;
  /** The request's priority class for `fleet` and `worker`. Required with either. */
  priority?: (request: R) => string;
}

/**
 * A layer's refusal, ready to write as it is: the status, the headers (Retry-After in whole seconds, the problem+json
 * content type) and a problem+json body naming the layer (`refusedBy`).
 */
export interface StackRefusal {
  readonly layer: StackLayer;
  readonly status: 429 | 503;
  readonly headers: Readonly<Record<'Retry-After' | 'Content-Type', string>>;
  /**
   * The same headers as fields for `writeHeaders` / `applyHeaders`, for a response the rate layer already wrote its
   * RateLimit items on: written that way, every `t` on it is capped at this Retry-After.
   */
  readonly fields: readonly HeaderField[];
  readonly body: string;
}

export interface StackOutcome {
  /** The request's priority class (with fleet or worker). */
  readonly priority: string | undefined;
  /** Set when a layer refused: whatever was held for the request has been handed to `hold` already, so release it. */
  readonly refusal: StackRefusal | undefined;
}

const LAYER_OPTIONS = ['concurrency', 'fleet', 'worker', 'priority'];
const OPTIONS_WITH_RATE = ['rate', ...LAYER_OPTIONS];

/**
 * The checks every stack makes on its options, returning the rate layer's options apart from the other layers':
 * an object of known options; `priority` a function, required with fleet or worker; concurrency needs a client,
 * from `identify` or from a rate layer. `where` names the adapter's function in messages, `example` shows options
 * when the argument is not an object; `rateOption` says whether `rate` is among the options (false where the rate
 * layer is registered on its own, as Fastify's rateLimitPlugin, whose identity concurrency may then use).
 */
export function checkStackLayers<R, Rate = never>(
  options: StackLayers<R> & { readonly rate?: Rate },
  adapter: { readonly where: string; readonly example: string; readonly rateOption: boolean },
): { rate: Rate | undefined; layers: StackLayers<R> } {
  const { where, example, rateOption } = adapter;
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `${where}: options must be an object such as ${example}`);
  }
  rejectUnknownOptions(options, rateOption ? OPTIONS_WITH_RATE : LAYER_OPTIONS, where);
  const { rate, ...layers } = options;
  const { concurrency, fleet, worker, priority } = layers;
  optionalFunction(priority, `${where}: priority`, '(request) => class');
  if ((fleet !== undefined || worker !== undefined) && priority === undefined) {
    throw new SluiceError('INVALID_OPTION', `${where}: priority must be a function (request) => class when fleet or worker is given`);
  }
  if (concurrency !== undefined && concurrency.identify === undefined && rateOption && rate === undefined) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${where}: concurrency needs identify (request) => client, or a rate layer whose identity it can use`,
    );
  }
  return { rate, layers };
}

/**
 * Consults concurrency, fleet and worker in that order for one request. Every lease taken is handed to `hold` at
 * once (the adapter releases it when the response ends, or right away on a refusal); the first refusal stops.
 */
export async function runStackLayers<R>(
  layers: StackLayers<R>,
  request: R,
  rateIdentity: string | undefined,
  hold: (lease: Lease) => void,
  acquireOptions?: AcquireOptions,
): Promise<StackOutcome> {
  const { concurrency, fleet, worker } = layers;
  const priority = layers.priority?.(request);
  if (concurrency !== undefined) {
    const identity = concurrency.identify?.(request) ?? rateIdentity;
    if (identity !== undefined) {
      const d = await concurrency.limiter.acquire(identity, acquireOptions);
      if (!d.allowed) return { priority, refusal: stackRefusal('concurrency', 'limited', concurrency.limiter.name, d.retryAfter) };
      if (d.lease !== undefined) hold(d.lease);
    }
  }
  if (fleet !== undefined) {
    const d = await fleet.acquire(priority!, acquireOptions);
    if (!d.allowed) return { priority, refusal: stackRefusal('fleet', 'shed', 'fleet', d.retryAfter) };
    if (d.lease !== undefined) hold(d.lease);
  }
  if (worker !== undefined) {
    const d = worker.check(priority!);
    if (!d.allowed) return { priority, refusal: stackRefusal('worker', 'shed', 'worker', d.retryAfter) };
  }
  return { priority, refusal: undefined };
}

export function stackRefusal(layer: StackLayer, kind: RefusalKind, policy: string, retryAfterMs: number): StackRefusal {
  const retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const body = JSON.stringify({ ...problemFor({ kind, policy, retryAfterSeconds }), refusedBy: layer });
  const headers = { 'Retry-After': String(retryAfterSeconds), 'Content-Type': PROBLEM_CONTENT_TYPE };
  const fields: HeaderField[] = [
    { name: 'Retry-After', value: headers['Retry-After'], merge: 'max' },
    { name: 'Content-Type', value: PROBLEM_CONTENT_TYPE, merge: 'set' },
  ];
  return { layer, status: kind === 'shed' ? 503 : 429, headers, fields, body };
}

/** The part of Node's ServerResponse that `heldUntilEnd` uses. */
export interface EndingResponse {
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

/**
 * Leases held until a Node response ends, however it ends: 'finish' when it was sent, 'close' when the connection
 * went first (an aborted client, a timeout) and after 'finish' too. The listeners are added with the first lease
 * (none when nothing is held); a lease that comes after the response ended, or after `release()`, goes back at once.
 * Without a response (a web adapter's, which has none yet while the layers decide) the leases are held until
 * `release()`: the adapter calls it on a refusal or an error, or hands it to `releasingBody`. `holding` says
 * whether any lease is held, to leave a response as it is when there is nothing to release.
 */
export function heldUntilEnd(response?: EndingResponse): { hold(lease: Lease): void; release(): void; readonly holding: boolean } {
  const leases: Lease[] = [];
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    for (const lease of leases) void lease.release();
  };
  const hold = (lease: Lease): void => {
    if (released || response?.writableEnded === true || response?.destroyed === true) {
      void lease.release();
      return;
    }
    if (leases.length === 0 && response !== undefined) {
      response.once('finish', release);
      response.once('close', release);
    }
    leases.push(lease);
  };
  return {
    hold,
    release,
    get holding() {
      return !released && leases.length > 0;
    },
  };
}

/**
 * A web response whose body releases a traffic stack's leases once it has been read to its end, has failed, or
 * was cancelled (the client left): the request holds its concurrency slot for as long as it is sending, as
 * `heldUntilEnd` does for Node's responses. A response without a body releases at once. Used by the Next.js and
 * Hono stacks.
 */
export function releasingBody(response: Response, release: () => void): Response {
  const body = response.body;
  if (body === null) {
    release();
    return response;
  }
  const reader = body.getReader();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: response.status, statusText: response.statusText, headers: response.headers });
}
