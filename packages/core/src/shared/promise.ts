/**
 * Whether a value is a promise (any thenable): how every sluice package tells an answer from a promise of one,
 * so a synchronous store or hook never pays for a promise.
 */
export function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
