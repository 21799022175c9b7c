/**
 * Stable error codes. A code never changes meaning once released; add new ones instead.
 * - `INVALID_OPTION`: a configuration value is out of range or of the wrong type.
 * - `UNKNOWN_OPTION`: an option name that the factory does not know (usually a typo).
 * - `INVALID_IDENTITY`: the identity passed to `limit()` is not a non-empty string.
 * - `INVALID_COST`: the cost is not a non-negative safe integer.
 * - `UNSUPPORTED_OPERATION`: the store does not implement the requested operation.
 * - `STORE_ERROR`: the store failed (network, script, corrupt state); `cause` holds the original.
 * - `STORE_TIMEOUT`: the store did not answer within the limiter's deadline.
 * - `CIRCUIT_OPEN`: the circuit breaker is open and the store was not called.
 */
export type SluiceErrorCode =
  | 'INVALID_OPTION'
  | 'UNKNOWN_OPTION'
  | 'INVALID_IDENTITY'
  | 'INVALID_COST'
  | 'INVALID_CLOCK'
  | 'UNSUPPORTED_OPERATION'
  | 'STORE_ERROR'
  | 'STORE_TIMEOUT'
  | 'CIRCUIT_OPEN'
  | 'WAIT_TOO_LONG'
  | 'ABORTED';

const BRAND = Symbol.for('sluice.error');

/** The one error class sluice throws. Check with `isSluiceError`, which works across duplicated package copies. */
export class SluiceError extends Error {
  readonly code: SluiceErrorCode;
  /** The message without its `[sluice] ` prefix, for a caller that puts it in a message of its own. */
  readonly detail: string;
  readonly [BRAND] = true;

  constructor(code: SluiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(`[sluice] ${message}`, options);
    this.name = 'SluiceError';
    this.code = code;
    this.detail = message;
  }
}

export function isSluiceError(value: unknown): value is SluiceError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
