import type { Store } from '@sluice/core';
import type { StoreOperation } from '@sluice/core/store';
import { memoryStore } from '@sluice/memory';
import type { HeaderField, HttpRequest } from '../src/index.js';
import { writeHeaders } from '../src/adapter/index.js';
export { brokenStore, deferred, fakeClock, memoryLimiter } from '../../../test/harness/doubles.js';

/** `null` for a runtime that exposes no socket address. */
export function request(remoteAddress: string | null = '203.0.113.7', headers: Record<string, string> = {}): HttpRequest {
  return { headers, remoteAddress: remoteAddress ?? undefined, method: 'GET', url: '/' };
}

/** The fields as a response would carry them (merged like an adapter does), names lower-cased. */
export function written(fields: readonly HeaderField[], start: Record<string, string> = {}): Record<string, string> {
  const headers = new Map(Object.entries(start).map(([k, v]) => [k.toLowerCase(), v]));
  writeHeaders(fields, {
    get: (name) => headers.get(name.toLowerCase()),
    set: (name, value) => void headers.set(name.toLowerCase(), value),
  });
  return Object.fromEntries(headers);
}

/** The memory store behind a promise, as any remote store answers; `operations` are those it says it runs. */
export function asyncMemoryStore(operations: readonly StoreOperation[] = ['limit', 'reset']): Store {
  const inner = memoryStore();
  return {
    capabilities: { synchronous: false, clock: 'client', operations },
    limit: (r) => Promise.resolve(inner.limit(r)),
    reset: (k, ids) => Promise.resolve(inner.reset(k, ids)),
  };
}

/** A remote store that books slots (`reserve`), as the throttled fetch's limiter needs: the memory store behind a promise. */
export function reserveStore(): Store {
  return asyncMemoryStore(['limit', 'reset', 'take', 'reserve']);
}
