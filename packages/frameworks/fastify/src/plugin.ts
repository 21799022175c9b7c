import { SluiceError, type Store } from '@sluice/core';
import { rejectUnknownOptions } from '@sluice/core/internal';
import { type HandleResult, type HttpLimitOptions, type ProblemDetails } from '@sluice/http';
import { addressLost, checkOptionsObject, HTTP_OPTION_NAMES, nodeHeaderTarget, writeHeaders } from '@sluice/http/adapter';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import {
  checkHook,
  PlanBuilder,
  RoutePlans,
  type HookStage,
  type Plan,
  type RouteConfig,
  type RouteRateLimitOptions,
} from './route-plans.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by @sluice/fastify: the answer for this request, or null when the route is not limited. */
    rateLimit: HandleResult | null;
  }
  interface FastifyContextConfig {
    /** `false`: not limited. A string: the group of that name. An object: this route's own settings. */
    rateLimit?: false | string | RouteRateLimitOptions;
  }
}

export interface FastifyRateLimitOptions extends Partial<HttpLimitOptions<FastifyRequest>> {
  /**
   * The limiter for every route that does not say otherwise (`config: { rateLimit: false }` opts a route out).
   * Without it, only routes with their own `rateLimit` config are limited.
   */
  limiter?: HttpLimitOptions<FastifyRequest>['limiter'];
  /** Store for limiters built from `rules` in route and group configs. */
  store?: Store;
  /** Named settings that routes select with `config: { rateLimit: 'name' }`; a group's routes share one counter per client. */
  groups?: Readonly<Record<string, RouteRateLimitOptions>>;
  /** Decide in `onRequest` (cheapest: before the body is read) or `preHandler` (after auth hooks). @default 'onRequest' */
  hook?: HookStage;
  /**
   * `reply`: answer refusals with problem+json right away. `throw`: hand a `RateLimitError` to Fastify's error
   * handler (RateLimit and Retry-After headers are already on the reply). @default 'reply'
   */
  errorResponse?: 'reply' | 'throw';
}

/** A refusal, as given to Fastify's error handler under `errorResponse: 'throw'`. */
export class RateLimitError extends Error {
  readonly statusCode: number;
  readonly code = 'SLUICE_RATE_LIMITED';
  readonly problem: ProblemDetails | undefined;
  readonly result: HandleResult;

  constructor(result: HandleResult) {
    const problem = parseProblem(result.body);
    super(problem?.detail ?? `request refused by the rate limiter (${result.outcome})`);
    this.name = 'RateLimitError';
    this.statusCode = result.status;
    this.problem = problem;
    this.result = result;
  }
}

const PLUGIN_OPTION_NAMES = [...HTTP_OPTION_NAMES, 'store', 'groups', 'hook', 'errorResponse'];

function sluiceFastify(fastify: FastifyInstance, options: FastifyRateLimitOptions, done: (error?: Error) => void): void {
  try {
    register(fastify, options);
  } catch (error) {
    done(error as Error);
    return;
  }
  done();
}

function register(fastify: FastifyInstance, options: FastifyRateLimitOptions): void {
  checkOptionsObject(options, '@sluice/fastify options', 'app.register(rateLimitPlugin, { limiter })');
  rejectUnknownOptions(options, PLUGIN_OPTION_NAMES, '@sluice/fastify');
  const { store, groups = {}, hook = 'onRequest', errorResponse = 'reply', ...shared } = options;
  checkHook(hook, 'hook');
  if (errorResponse !== 'reply' && errorResponse !== 'throw') {
    throw new SluiceError('INVALID_OPTION', `errorResponse must be 'reply' or 'throw', got ${JSON.stringify(errorResponse)}`);
  }
  const builder = new PlanBuilder(shared, store, hook);
  const global: Plan | null = shared.limiter === undefined ? null : builder.build(shared, 'plugin options', 'global');
  const groupPlans = new Map<string, Plan>();
  for (const [name, group] of Object.entries(groups)) {
    if ('group' in group) throw new SluiceError('INVALID_OPTION', `groups.${name}: a group cannot name another group`);
    groupPlans.set(name, builder.build(group, `groups.${name}`, name));
  }
  const plans = new RoutePlans(builder, global, groupPlans);

  // onRequest always runs globally. preHandler runs globally only when the plugin or a group asks for it;
  // otherwise a route that asks for it gets its own preHandler hook when it is declared, so the common case
  // pays for one hook per request.
  const globalPreHandler = hook === 'preHandler' || [...groupPlans.values()].some((p) => p.hook === 'preHandler');
  const hooked = new WeakSet<object>();
  const decide = (plan: Plan, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction): void =>
    runPlan(plan, request, reply, next, errorResponse);
  fastify.decorateRequest('rateLimit', null);
  fastify.addHook('onRoute', (route) => {
    const plan = plans.forRoute(route.config as RouteConfig, route.method, route.url);
    if (plan !== null && plan.hook === 'preHandler' && !globalPreHandler) {
      const own = (request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) => decide(plan, request, reply, next);
      const existing = route.preHandler;
      route.preHandler = existing === undefined ? [own] : [...[existing].flat(), own];
      hooked.add((route.config as { rateLimit: object }).rateLimit);
    }
  });
  /** Whether onRoute gave this request's route a preHandler hook of its own. */
  const hasOwnHook = (request: FastifyRequest): boolean => {
    const config = request.routeOptions.config as { rateLimit?: unknown } | undefined;
    return typeof config?.rateLimit === 'object' && config.rateLimit !== null && hooked.has(config.rateLimit);
  };

  fastify.addHook('onRequest', function sluiceOnRequest(request, reply, next) {
    const plan = planOrError(plans, request, next);
    if (plan === undefined) return;
    if (plan === null) return next();
    if (plan.hook === 'preHandler') {
      if (globalPreHandler || hasOwnHook(request)) return next();
      // Only a route declared before the plugin can get here: onRoute never saw it to give it its hook.
      next(
        new SluiceError(
          'INVALID_OPTION',
          `route ${request.routeOptions.url}: hook 'preHandler' on a route declared before @sluice/fastify was registered; declare it after, or set the plugin's hook to 'preHandler'`,
        ),
      );
      return;
    }
    decide(plan, request, reply, next);
  });
  if (globalPreHandler) {
    fastify.addHook('preHandler', function sluicePreHandler(request, reply, next) {
      const plan = planOrError(plans, request, next);
      if (plan === undefined) return;
      if (plan === null || plan.hook !== 'preHandler') return next();
      decide(plan, request, reply, next);
    });
  }
}

/** The request's plan; undefined when finding it failed (a route's bad configuration), already passed to `next`. */
function planOrError(plans: RoutePlans, request: FastifyRequest, next: HookHandlerDoneFunction): Plan | null | undefined {
  try {
    return plans.forRequest(request);
  } catch (error) {
    next(error as Error);
    return undefined;
  }
}

/** Runs a plan's handler for one request and hands its answer to Fastify (`finish`). */
function runPlan(
  plan: Plan,
  request: FastifyRequest,
  reply: FastifyReply,
  next: HookHandlerDoneFunction,
  errorResponse: 'reply' | 'throw',
): void {
  let pending: HandleResult | Promise<HandleResult>;
  try {
    const raw = request.raw;
    const remoteAddress = raw.socket?.remoteAddress;
    // A client that reset its connection has no address any more: refused, never "unidentified" and let through.
    const connectionLost = remoteAddress === undefined && addressLost(raw.socket);
    pending = plan.handler.run({ headers: raw.headers, remoteAddress, connectionLost, method: raw.method, url: raw.url }, request);
  } catch (error) {
    next(error as Error);
    return;
  }
  if (pending instanceof Promise) {
    pending.then(
      (result) => finish(request, reply, next, result, errorResponse),
      (error: Error) => next(error),
    );
  } else {
    finish(request, reply, next, pending, errorResponse);
  }
}

function finish(
  request: FastifyRequest,
  reply: FastifyReply,
  next: HookHandlerDoneFunction,
  result: HandleResult,
  errorResponse: 'reply' | 'throw',
): void {
  // The first sluice decision on a request has nothing to merge with: it only sets.
  const first = request.rateLimit === null;
  request.rateLimit = result;
  if (first) {
    // Nothing to merge with: every field is set as it comes (what writeHeaders does on an empty reply).
    for (const field of result.headers) reply.header(field.name, field.value);
  } else {
    writeHeaders(
      result.headers,
      nodeHeaderTarget(
        (name) => reply.getHeader(name),
        (name, value) => void reply.header(name, value),
      ),
    );
  }
  if (result.allowed) {
    next();
  } else if (errorResponse === 'throw') {
    next(new RateLimitError(result));
  } else {
    // Answering from a callback hook: send, and do not call next.
    reply.code(result.status).send(result.body);
  }
}

function parseProblem(body: string | undefined): ProblemDetails | undefined {
  if (body === undefined) return undefined;
  try {
    const parsed = JSON.parse(body) as ProblemDetails;
    return typeof parsed === 'object' && parsed !== null && typeof parsed.status === 'number' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The sluice plugin. Registered with fastify-plugin, so its hooks apply to the whole app, whether routes are
 * declared before or after it.
 * @example
 * await app.register(rateLimitPlugin, { limiter, identify: (req) => req.user?.id });
 * app.post('/login', { config: { rateLimit: { limiter: loginLimiter } } }, handler);
 */
export const rateLimitPlugin = fp(sluiceFastify, { fastify: '5.x', name: '@sluice/fastify' });
