import { writeHeaders, type HeaderField, type HeaderTarget } from '../shared/header-fields.js';
import type { HandleResult } from './handler.js';

/** web `Headers` as a header target. */
export function headersTarget(headers: { get(name: string): string | null; set(name: string, value: string): void }): HeaderTarget {
  return {
    get: (name) => headers.get(name) ?? undefined,
    set: (name, value) => headers.set(name, value),
  };
}

/** Adds the result's header fields to a web `Headers` (an outgoing response's), merging with what is there. */
export function applyHeaders(
  fields: readonly HeaderField[],
  headers: { get(name: string): string | null; set(name: string, value: string): void },
): void {
  writeHeaders(fields, headersTarget(headers));
}

/**
 * The refusal as a web `Response` (fetch handlers, edge middleware). Only meaningful when `result.allowed` is
 * false; for an allowed request, add `result.headers` to the route's own response with `applyHeaders`.
 */
export function toResponse(result: HandleResult): Response {
  const headers = new Headers();
  applyHeaders(result.headers, headers);
  return new Response(result.body ?? null, { status: result.status, headers });
}
