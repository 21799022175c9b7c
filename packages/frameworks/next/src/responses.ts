import { applyHeaders, type HandleResult } from './http.js';
import { NextResponse } from 'next/server';

/**
 * The refusal as a `NextResponse`: 429 (or 503, 413, 400), `RateLimit` and `Retry-After` headers and the
 * problem+json body. Only meaningful when `result.allowed` is false.
 */
export function toNextResponse(result: HandleResult): NextResponse {
  const response = new NextResponse(result.body ?? null, { status: result.status });
  applyHeaders(result.headers, response.headers);
  return response;
}

/**
 * Adds the result's RateLimit headers to a response you build (`NextResponse.next()`, `.rewrite()`, `.json()`),
 * merging with what an earlier sluice limiter wrote, and returns it. The response's headers must be mutable:
 * `NextResponse.redirect()` is, the web `Response.redirect()` is not.
 */
export function withRateLimitHeaders<T extends Response>(result: HandleResult, response: T): T {
  applyHeaders(result.headers, response.headers);
  return response;
}
