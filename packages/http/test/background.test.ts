// BackgroundHooks, the adapters' shared background work (@sluice/hono and @sluice/next run their hooks through it).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BackgroundHooks, type WaitUntil } from '../src/adapter/index.js';

interface Req {
  id: string;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

afterEach(() => {
  vi.restoreAllMocks();
});

describe('BackgroundHooks', () => {
  it("hands a hook's promise to the request's waitUntil, settled so that it never rejects, and leaves other values alone", async () => {
    const handed: Promise<unknown>[] = [];
    const hooks = new BackgroundHooks<Req>({ adapter: '@sluice/test', waitUntilOf: () => (promise) => void handed.push(promise) });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    hooks.hand({ id: 'a' }, 'onLimited', 'not a promise');
    expect(handed).toHaveLength(0);
    hooks.hand({ id: 'a' }, 'onLimited', Promise.reject(new Error('shipping failed')));
    expect(handed).toHaveLength(1);
    await expect(handed[0]).resolves.toBeUndefined();
    // No onError: one throttled warning naming the adapter and the hook.
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(
      /^\[sluice\] @sluice\/test: onLimited failed; pass onError to handle it: shipping failed/,
    );
  });

  it('sends a throw or a rejection to onError with the request, and its own work to the same waitUntil', async () => {
    const handed: Promise<unknown>[] = [];
    const seen: string[] = [];
    const hooks = new BackgroundHooks<Req>({
      adapter: '@sluice/test',
      waitUntilOf: (request) => (request.id === 'with' ? (promise) => void handed.push(promise) : undefined),
      onError: async (error, event) => {
        seen.push(`${(error as Error).message} ${event.request.id} ${event.source}`);
      },
    });
    hooks.run({ id: 'with' }, 'onDecision', () => {
      throw new Error('thrown');
    });
    hooks.run({ id: 'without' }, 'onDecision', () => Promise.reject(new Error('rejected')));
    await settle();
    expect(seen.sort()).toEqual(['rejected without hook', 'thrown with hook']);
    expect(handed).toHaveLength(1); // onError's promise for the request that has a waitUntil
  });

  it("a failure of onError's own work, or a waitUntil that refuses, is a warning, never an unhandled rejection", async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const refusing: WaitUntil = () => {
      throw new Error('outside a request scope');
    };
    const hooks = new BackgroundHooks<Req>({
      adapter: '@sluice/test',
      waitUntilOf: () => refusing,
      onError: () => Promise.reject(new Error('onError broke')),
    });
    hooks.run({ id: 'a' }, 'onLimited', () => Promise.reject(new Error('first')));
    await settle();
    // The refusal came first (the hook's own promise), the onError failure later: the one-a-minute throttle shows the first.
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(
      /waitUntil refused the background work of onLimited \(it still runs, unprotected\): outside a request scope/,
    );
  });
});
