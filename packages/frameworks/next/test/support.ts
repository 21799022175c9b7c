import { NextRequest } from 'next/server';
export { brokenStore, deferred, fakeClock, memoryLimiter } from '../../../../test/harness/doubles.js';

export function nextRequest(headers: Record<string, string> = {}, path = '/api/items'): NextRequest {
  return new NextRequest(`https://app.example${path}`, { headers });
}

/** A stand-in for NextFetchEvent: records what was handed to waitUntil. */
export function fetchEvent() {
  const handed: Promise<unknown>[] = [];
  return { handed, waitUntil: (promise: Promise<unknown>) => void handed.push(promise) };
}
