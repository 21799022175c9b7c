import { isPromiseLike } from '@sluice/core/store';
import { throttledWarning, type ErrorEvent } from '@sluice/http';
import type { Context } from 'hono';

type OnError = (error: unknown, event: ErrorEvent<Context>) => unknown;

/**
 * Background work started by hooks. Hooks receive the context, so each promise goes to that request's
 * `c.executionCtx.waitUntil` when the runtime has one (Cloudflare Workers, and Bun/Deno adapters that pass one);
 * on Node there is none and the promise simply runs.
 *
 * Invariant: no promise a hook returns is left unobserved. Each is settled into a promise that never rejects
 * before it is handed over; a rejection goes to `onError` (or, for `onError`'s own work, to a console warning).
 */
export class Background {
  private readonly warn = warner();

  constructor(private readonly onError: OnError | undefined) {}

  /** Calls a hook; a promise it returns (or a throw) becomes background work of the request. */
  run(c: Context, hook: string, call: () => unknown): void {
    let value: unknown;
    try {
      value = call();
    } catch (error) {
      this.failed(c, hook, error);
      return;
    }
    this.hand(c, hook, value);
  }

  /** Hands a hook's return value to the request's waitUntil when it is a promise. */
  hand(c: Context, hook: string, value: unknown): void {
    if (!isPromiseLike(value)) return;
    const settled = Promise.resolve(value).then(
      () => undefined,
      (error: unknown) => this.failed(c, hook, error),
    );
    const waitUntil = waitUntilOf(c);
    if (waitUntil === undefined) return; // still runs; nothing keeps a serverless invocation alive for it
    try {
      waitUntil(settled);
    } catch (error) {
      this.warn(`waitUntil refused the background work of ${hook} (it still runs, unprotected)`, error);
    }
  }

  private failed(c: Context, hook: string, error: unknown): void {
    const onError = this.onError;
    if (hook === 'onError' || onError === undefined) {
      this.warn(hook === 'onError' ? 'onError failed' : `${hook} failed; pass onError to handle it`, error);
      return;
    }
    this.run(c, 'onError', () => onError(error, { request: c, source: 'hook' }));
  }
}

/** `c.executionCtx.waitUntil`, or undefined where the runtime gives none: Hono's getter throws then (Node). */
export function waitUntilOf(c: Context): ((promise: Promise<unknown>) => void) | undefined {
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

/** At most one console warning a minute (see @sluice/http's throttledWarning), so a failing hook is seen but not spammed. */
function warner(): (what: string, error: unknown) => void {
  const warn = throttledWarning();
  return (what, error) => {
    const message = error instanceof Error ? error.message : String(error);
    warn(`[sluice] @sluice/hono: ${what}: ${message}`);
  };
}
