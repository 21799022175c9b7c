import { type ErrorEvent } from '@sluice/http';
import { BackgroundHooks, type WaitUntil } from '@sluice/http/adapter';
import type { Context } from 'hono';

/**
 * Background work started by hooks (@sluice/http's BackgroundHooks). Hooks receive the context, so each promise
 * goes to that request's `c.executionCtx.waitUntil` when the runtime has one (Cloudflare Workers, and Bun/Deno
 * adapters that pass one); on Node there is none and the promise simply runs.
 */
export function background(onError: ((error: unknown, event: ErrorEvent<Context>) => unknown) | undefined): BackgroundHooks<Context> {
  return new BackgroundHooks<Context>({ adapter: '@sluice/hono', waitUntilOf, onError });
}

/** `c.executionCtx.waitUntil`, or undefined where the runtime gives none: Hono's getter throws then (Node). */
function waitUntilOf(c: Context): WaitUntil | undefined {
  let ctx: { waitUntil?: unknown } | undefined;
  try {
    ctx = c.executionCtx as { waitUntil?: unknown } | undefined;
  } catch {
    return undefined;
  }
  if (typeof ctx?.waitUntil !== 'function') return undefined;
  const target = ctx as { waitUntil(promise: Promise<unknown>): void };
  return (promise) => target.waitUntil(promise);
}
