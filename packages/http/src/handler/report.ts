import { isSluiceError } from '@sluice/core';
import { isPromiseLike } from '@sluice/core/internal';
import type { CompiledOptions, Warner } from './types.js';
import type { ErrorEvent, LimitedEvent } from './options.js';

/** Calls onLimited for a refusal or a shadow would-be refusal; an exception from it, or a rejection, goes to onError. */
export function limited<R>(o: CompiledOptions<R>, event: LimitedEvent<R>): void {
  if (o.onLimited === undefined) return;
  try {
    // An async hook (`async (event) => { await log(event) }` type-checks as returning void): its rejection is
    // reported like a throw, never left unhandled. The response does not wait for it.
    const returned: unknown = o.onLimited(event);
    if (isPromiseLike(returned)) {
      returned.then(undefined, (error: unknown) =>
        report(o, error, { request: event.request, source: 'hook', limiterName: event.limiterName, decision: event.decision }),
      );
    }
  } catch (error) {
    report(o, error, { request: event.request, source: 'hook', limiterName: event.limiterName, decision: event.decision });
  }
}

/**
 * At most one console warning a minute, counting the ones held back, so a recurring failure is seen but a
 * broken store or hook cannot flood the log. Shared by the adapters for their own warnings.
 */
export function throttledWarning(): (text: string) => void {
  let last = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  return (text) => {
    const now = Date.now();
    if (now - last < 60_000) {
      suppressed++;
      return;
    }
    last = now;
    const more = suppressed > 0 ? ` (${suppressed} more since the last warning)` : '';
    suppressed = 0;
    console.warn(`${text}${more}`);
  };
}

/**
 * Without onError, a failing store still shows: one console warning a minute, with one `[sluice]` prefix, the
 * store's name and the error with its causes (a refused connection's `ECONNREFUSED`, say).
 */
export function warner(): Warner {
  const warn = throttledWarning();
  return (error, event, store) => {
    const where = store === undefined ? '' : ` (${store})`;
    warn(
      `[sluice] ${event.source} failure in limiter "${event.limiterName ?? '?'}"${where}: ${explain(error)}. Pass onError to handle it.`,
    );
  };
}

/** The error's message without sluice's prefix, followed by each cause that adds something (up to three deep). */
export function explain(error: unknown): string {
  let text = messageOf(error);
  let cause = (error as { cause?: unknown } | null)?.cause;
  for (let depth = 0; depth < 3 && cause !== undefined && cause !== null; depth++) {
    const message = messageOf(cause);
    const code = (cause as { code?: unknown }).code;
    if (message !== '' && !text.includes(message)) text += `; cause: ${message}`;
    if (typeof code === 'string' && !text.includes(code)) text += ` (${code})`;
    cause = (cause as { cause?: unknown }).cause;
  }
  return text;
}

function messageOf(error: unknown): string {
  return isSluiceError(error) ? error.detail : error instanceof Error ? error.message : String(error);
}

/** Hands an error to onError, or, without one (or when it throws), to the handler's throttled console warning. */
export function report<R>(o: CompiledOptions<R>, error: unknown, event: ErrorEvent<R>, store?: string): void {
  if (o.onError === undefined) {
    o.warn(error, event as ErrorEvent<unknown>, store);
    return;
  }
  try {
    o.onError(error, event);
  } catch {
    // onError is the last stop: an exception thrown by it has nowhere better to go than the warning.
    o.warn(error, event as ErrorEvent<unknown>, store);
  }
}
