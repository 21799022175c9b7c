import { BackgroundHooks, type ErrorEvent, type WaitUntil } from './http.js';
import type { NextRequest } from 'next/server';

/**
 * Background work started by hooks (@sluice/http's BackgroundHooks). The hooks run inside @sluice/http's handler,
 * which hands them the request alone, so each request's `waitUntil` is looked up by the request object: Next.js
 * builds one `NextRequest` per invocation, and the entry goes when the request does (a WeakMap, nothing to clean
 * up). A request with no event (a Route Handler, a Server Action) uses `fallback`, the `waitUntil` option.
 */
export class Background {
  private readonly sinks = new WeakMap<object, WaitUntil>();
  readonly hooks: BackgroundHooks<NextRequest>;

  constructor(fallback: WaitUntil | undefined, onError: ((error: unknown, event: ErrorEvent<NextRequest>) => unknown) | undefined) {
    this.hooks = new BackgroundHooks<NextRequest>({
      adapter: '@sluice/next',
      waitUntilOf: (request) => this.sinks.get(request) ?? fallback,
      onError,
    });
  }

  /** Routes this request's background work to its event (`NextFetchEvent.waitUntil`). */
  bind(request: NextRequest, event: { waitUntil(promise: Promise<unknown>): void }): void {
    this.sinks.set(request, (promise) => event.waitUntil(promise));
  }
}
