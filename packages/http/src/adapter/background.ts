import { isPromiseLike } from '@sluice/core/internal';
import type { ErrorEvent } from '../handler/options.js';
import { throttledWarning } from '../handler/report.js';

/** Where a request's background promises go: its platform's `waitUntil`. */
export type WaitUntil = (promise: Promise<unknown>) => void;

export interface BackgroundHooksOptions<R> {
  /** The adapter, named in warnings: `'@sluice/next'`. */
  adapter: string;
  /** The request's `waitUntil`, or undefined where there is none (Node): the work then runs unprotected. */
  waitUntilOf(request: R): WaitUntil | undefined;
  /** The user's `onError`, for failures of the other hooks' background work. */
  onError?: ((error: unknown, event: ErrorEvent<R>) => unknown) | undefined;
}

/**
 * Background work started by an adapter's hooks (`onDecision`, `onLimited`, `onError`): a promise a hook returns
 * goes to the request's `waitUntil` (Cloudflare's `ctx.waitUntil`, Next.js's `event.waitUntil` or `after`), so it
 * neither delays the response nor is cut off when the response is sent. The adapters differ only in where a
 * request's `waitUntil` is found.
 *
 * Invariant: no promise a hook returns is left unobserved. Each is settled into a promise that never rejects
 * before it is handed over; a rejection (or a throw) goes to `onError`, and a failure of `onError`'s own work to a
 * console warning, at most one a minute.
 */
export class BackgroundHooks<R> {
  private readonly warn: (what: string, error: unknown) => void;

  constructor(private readonly options: BackgroundHooksOptions<R>) {
    const warn = throttledWarning();
    this.warn = (what, error) => warn(`[sluice] ${options.adapter}: ${what}: ${error instanceof Error ? error.message : String(error)}`);
  }

  /** Calls a hook; a promise it returns (or a throw) becomes background work of the request. */
  run(request: R, hook: string, call: () => unknown): void {
    let value: unknown;
    try {
      value = call();
    } catch (error) {
      this.failed(request, hook, error);
      return;
    }
    this.hand(request, hook, value);
  }

  /** Hands a hook's return value to the request's `waitUntil` when it is a promise. */
  hand(request: R, hook: string, value: unknown): void {
    if (!isPromiseLike(value)) return;
    const settled = Promise.resolve(value).then(
      () => undefined,
      (error: unknown) => this.failed(request, hook, error),
    );
    const waitUntil = this.options.waitUntilOf(request);
    if (waitUntil === undefined) return; // still runs; nothing keeps a serverless invocation alive for it
    try {
      waitUntil(settled);
    } catch (error) {
      // e.g. Next's `after` called outside a request scope: the work still runs, but say that it is unprotected.
      this.warn(`waitUntil refused the background work of ${hook} (it still runs, unprotected)`, error);
    }
  }

  private failed(request: R, hook: string, error: unknown): void {
    const onError = this.options.onError;
    if (hook === 'onError' || onError === undefined) {
      this.warn(hook === 'onError' ? 'onError failed' : `${hook} failed; pass onError to handle it`, error);
      return;
    }
    this.run(request, 'onError', () => onError(error, { request, source: 'hook' }));
  }
}
