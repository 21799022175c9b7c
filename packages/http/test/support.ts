import { createLimiter, type LimiterOptions, type Store } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import type { HeaderField, HttpRequest } from '../src/index.js';
import { writeHeaders } from '../src/index.js';

/** A fake clock on a whole 10 s boundary plus 3 s, so a 10 s fixed window has 7 s left. */
export function fakeClock(start = 1_700_000_003_000) {
  const clock = { now: start, read: () => clock.now };
  return clock;
}

export function memoryLimiter(options: Omit<LimiterOptions, 'store'>) {
  return createLimiter({ store: memoryStore(), ...options });
}

/** `null` for a runtime that exposes no socket address. */
export function request(remoteAddress: string | null = '203.0.113.7', headers: Record<string, string> = {}): HttpRequest {
  return { headers, remoteAddress: remoteAddress ?? undefined, method: 'GET', url: '/' };
}

/** The fields as a response would carry them (merged like an adapter does), names lower-cased. */
export function written(fields: readonly HeaderField[], start: Record<string, string> = {}): Record<string, string> {
  const headers = new Map(Object.entries(start).map(([k, v]) => [k.toLowerCase(), v]));
  writeHeaders(fields, { get: (name) => headers.get(name.toLowerCase()), set: (name, value) => void headers.set(name.toLowerCase(), value) });
  return Object.fromEntries(headers);
}

/** A store that fails every call, as a dead Redis does: for the failure-policy paths. */
export function brokenStore(): Store {
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: () => Promise.reject(new Error('connection refused')),
    reset: () => Promise.reject(new Error('connection refused')),
  };
}

/** The memory store behind a promise, as any remote store answers. */
export function asyncMemoryStore(): Store {
  const inner = memoryStore();
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: (r) => Promise.resolve(inner.limit(r)),
    reset: (k, ids) => Promise.resolve(inner.reset(k, ids)),
  };
}
