import { SluiceError, createLimiter, type Limiter, type Rule, type Store } from '@sluice/core';
import { nameOption, rejectUnknownOptions } from '@sluice/core/internal';
import { createHandler, type Handler, type HttpLimitOptions } from '@sluice/http';
import { checkOptionsObject, HTTP_OPTION_NAMES } from '@sluice/http/adapter';
import type { FastifyRequest } from 'fastify';

export type HookStage = 'onRequest' | 'preHandler';

/** Per-route (or per-group) settings: any handler option, plus where the limiter comes from and when it runs. */
export interface RouteRateLimitOptions extends Partial<HttpLimitOptions<FastifyRequest>> {
  /** Use a group declared in the plugin's `groups`: every route naming it shares one counter per client. */
  group?: string;
  /** A limiter of this route's own, with these rules, on the plugin's `store`. */
  rules?: Rule | readonly Rule[];
  /** Limiter name (its name in the RateLimit headers too) for `rules`. @default derived from the method and URL, or the group name */
  name?: string;
  /** When to decide: before parsing (`onRequest`), or after auth hooks have run (`preHandler`). @default the plugin's */
  hook?: HookStage;
}

/** What one route does: its handler and the hook stage it runs in. */
export interface Plan {
  readonly handler: Handler<FastifyRequest>;
  readonly hook: HookStage;
}

const ROUTE_OPTION_NAMES = [...HTTP_OPTION_NAMES, 'group', 'rules', 'name', 'hook'];

export function checkHook(value: unknown, field: string): HookStage {
  if (value !== 'onRequest' && value !== 'preHandler') {
    throw new SluiceError('INVALID_OPTION', `${field} must be 'onRequest' or 'preHandler', got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Builds plans from plugin-level defaults; validation errors name the route or group they come from. */
export class PlanBuilder {
  private readonly names = new Set<string>();

  constructor(
    private readonly shared: Partial<HttpLimitOptions<FastifyRequest>>,
    private readonly store: Store | undefined,
    private readonly defaultHook: HookStage,
  ) {}

  build(options: RouteRateLimitOptions, where: string, fallbackName: string): Plan {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('INVALID_OPTION', `${where}: rateLimit must be false, a group name, or an options object`);
    }
    checkOptionsObject(options, `${where}: rateLimit`, 'config: { rateLimit: { limiter } }');
    rejectUnknownOptions(options, ROUTE_OPTION_NAMES, `${where}: rateLimit`);
    const { rules, name, hook, group: _group, ...http } = options;
    let limiter: HttpLimitOptions<FastifyRequest>['limiter'] | undefined = http.limiter ?? this.shared.limiter;
    if (rules !== undefined) {
      if (http.limiter !== undefined) throw new SluiceError('INVALID_OPTION', `${where}: give either limiter or rules, not both`);
      if (this.store === undefined) {
        throw new SluiceError('INVALID_OPTION', `${where}: rules need a store; pass store (e.g. memoryStore()) to the plugin`);
      }
      limiter = createLimiter({ store: this.store, rules, name: this.uniqueName(name, fallbackName, where) }) as Limiter;
    }
    if (limiter === undefined) {
      throw new SluiceError('INVALID_OPTION', `${where}: no limiter: give limiter or rules here, or a limiter to the plugin`);
    }
    const merged = { ...this.shared, ...http, limiter } as HttpLimitOptions<FastifyRequest>;
    try {
      return { handler: createHandler(merged), hook: hook === undefined ? this.defaultHook : checkHook(hook, `${where}: hook`) };
    } catch (error) {
      if (error instanceof Error) error.message = error.message.replace('[sluice] ', `[sluice] ${where}: `);
      throw error;
    }
  }

  /**
   * A name given explicitly must be free; one derived from a route is made unique with a suffix, so two routes
   * never share a counter by accident (sharing is what groups are for).
   */
  private uniqueName(explicit: string | undefined, derived: string, where: string): string {
    if (explicit !== undefined) {
      nameOption(explicit, `${where}: name`);
      if (this.names.has(explicit)) {
        throw new SluiceError(
          'INVALID_OPTION',
          `${where}: the limiter name ${JSON.stringify(explicit)} is already used by another route or group`,
        );
      }
      this.names.add(explicit);
      return explicit;
    }
    const base =
      derived
        .replace(/[^A-Za-z0-9_.-]+/g, '_')
        .replace(/^_+|_+$/g, '')
        .slice(0, 56) || 'route';
    let candidate = base;
    for (let n = 2; this.names.has(candidate); n++) candidate = `${base}-${n}`;
    this.names.add(candidate);
    return candidate;
  }
}

/** A route's config as Fastify gives it to hooks. */
export type RouteConfig = FastifyRequest['routeOptions']['config'] | undefined;

/**
 * Which plan each route runs: the plugin's, a group's, its own, or none. Plans are built once per route: at
 * declaration (so configuration errors surface at startup) for routes declared after the plugin, at first request
 * for routes declared before it. Keyed by the route's rateLimit object and URL, so a GET route and its automatic
 * HEAD route share one plan (and one counter).
 */
export class RoutePlans {
  private readonly plans = new WeakMap<object, Map<string, Plan | null>>();
  /** Per request, the plan is one WeakMap lookup on the route's config object (stable for the route's lifetime). */
  private readonly byConfig = new WeakMap<object, Plan | null>();

  constructor(
    private readonly builder: PlanBuilder,
    private readonly global: Plan | null,
    private readonly groups: ReadonlyMap<string, Plan>,
  ) {}

  forRequest(request: FastifyRequest): Plan | null {
    const { config, method, url } = request.routeOptions;
    let plan = this.byConfig.get(config);
    if (plan === undefined) {
      plan = this.forRoute(config, method, url);
      this.byConfig.set(config, plan);
    }
    return plan;
  }

  forRoute(config: RouteConfig, method: string | string[], url: string | undefined): Plan | null {
    const setting = config?.rateLimit;
    if (setting === undefined) return this.global;
    if (setting === false) return null;
    if (typeof setting === 'string') {
      const plan = this.groups.get(setting);
      if (plan === undefined) {
        throw new SluiceError(
          'INVALID_OPTION',
          `route ${url}: rateLimit names the group ${JSON.stringify(setting)}, but the plugin's groups are ${[...this.groups.keys()].join(', ') || 'none'}`,
        );
      }
      return plan;
    }
    if (setting.group !== undefined) {
      const { group, ...rest } = setting;
      if (Object.keys(rest).length > 0) {
        throw new SluiceError(
          'INVALID_OPTION',
          `route ${url}: a route in group ${JSON.stringify(group)} takes all its settings from the group; move ${Object.keys(rest).join(', ')} there`,
        );
      }
      return this.forRoute({ ...config, rateLimit: group } as RouteConfig, method, url);
    }
    const key = url ?? '';
    let byUrl = this.plans.get(setting);
    if (byUrl === undefined) this.plans.set(setting, (byUrl = new Map()));
    let plan = byUrl.get(key);
    if (plan === undefined) {
      plan = this.builder.build(
        setting,
        `route ${key}`,
        `${[method]
          .flat()
          .filter((m) => m !== 'HEAD')
          .join('_')}${key}`,
      );
      byUrl.set(key, plan);
    }
    return plan;
  }
}
