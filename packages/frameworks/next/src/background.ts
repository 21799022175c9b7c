import { isPromiseLike } from '@sluice/core/store';
import { throttledWarning, type ErrorEvent } from './http.js';
import type { NextRequest } from 'next/server';

type Sink = (promise: Promise<unknown>) => void;
type OnError = (error: unknown, event: ErrorEvent<NextRequest>) => unknown;

/**
 * Background work started by hooks. The hooks run inside @sluice/http's handler, which hands them the request
 * alone, so each request's `waitUntil` is looked up by the request object: Next.js builds one `NextRequest` per
 * invocation, and the entry goes when the request does (a WeakMap, nothing to clean up).
 *
 * Invariant: no promise a hook returns is left unobserved. Each is settled into a promise that never rejects
 * before it is handed over; a rejection goes to `onError` (or, for `onError`'s own work, to a console warning).
 */
export class Background {
  private readonly sinks = new WeakMap<object, Sink>();
  private readonly warn = warner();
  private onError: OnError | undefined;

  constructor(private readonly fallback: Sink | undefined) {}

  /** The user's onError, for failures of the other hooks' background work. */
  reportTo(onError: OnError | undefined): void {
    this.onError = onError;
  }

  /** Routes this request's background work to its event (`NextFetchEvent.waitUntil`). */
  bind(request: NextRequest, event: { waitUntil(promise: Promise<unknown>): void }): void {
    this.sinks.set(request, (promise) => event.waitUntil(promise));
  }

  /** Calls a hook; a promise it returns (or a throw) becomes background work of the request. */
  run(request: NextRequest, hook: string, call: () => unknown): void {
    let value: unknown;
    try {
      value = call();
    } catch (error) {
      this.failed(request, hook, error);
      return;
    }
    this.hand(request, hook, value);
  }

  /** Hands a hook's return value to the request's waitUntil when it is a promise. */
  hand(request: NextRequest, hook: string, value: unknown): void {
    if (!isPromiseLike(value)) return;
    const settled = Promise.resolve(value).then(
      () => undefined,
      (error: unknown) => this.failed(request, hook, error),
    );
    const sink = this.sinks.get(request) ?? this.fallback;
    if (sink === undefined) return; // still runs; nothing keeps the invocation alive for it
    try {
      sink(settled);
    } catch (error) {
      // e.g. `after` called outside a request scope: the work still runs, but say that it is unprotected.
      this.warn(`waitUntil refused the background work of ${hook} (it still runs, unprotected)`, error);
    }
  }

  private failed(request: NextRequest, hook: string, error: unknown): void {
    const onError = this.onError;
    if (hook === 'onError' || onError === undefined) {
      this.warn(hook === 'onError' ? 'onError failed' : `${hook} failed; pass onError to handle it`, error);
      return;
    }
    this.run(request, 'onError', () => onError(error, { request, source: 'hook' }));
  }
}

/** At most one console warning a minute (see @sluice/http's throttledWarning), so a failing hook is seen but not spammed. */
function warner(): (what: string, error: unknown) => void {
  const warn = throttledWarning();
  return (what, error) => {
    const message = error instanceof Error ? error.message : String(error);
    warn(`[sluice] @sluice/next: ${what}: ${message}`);
  };
}
