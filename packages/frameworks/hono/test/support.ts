export { brokenStore, deferred, fakeClock, memoryLimiter } from '../../../../test/harness/doubles.js';

/** A stand-in for Cloudflare's ExecutionContext: records what was handed to waitUntil. */
export function executionContext() {
  const handed: Promise<unknown>[] = [];
  return {
    handed,
    waitUntil: (promise: Promise<unknown>) => void handed.push(promise),
    passThroughOnException: () => undefined,
    props: {},
  };
}
