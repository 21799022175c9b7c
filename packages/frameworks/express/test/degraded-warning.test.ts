import { createLimiter, fixedWindow, type Store } from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import express from 'express';
import type { Server } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { rateLimit } from '../src/index.js';

// Real faults, not a mocked client: a store that opens a TCP connection to a loopback port nobody listens on (the
// kernel refuses it: ECONNREFUSED), and a store that never answers; requests go through Express over real HTTP.

/** A loopback port that was free a moment ago and has no listener now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset'] } as const;

class RefusedStore implements Store {
  readonly capabilities = capabilities;
  constructor(private readonly port: number) {}
  limit(_request: LimitRequest): Promise<LimitResult> {
    return new Promise((_resolve, reject) => {
      const socket = connect(this.port, '127.0.0.1');
      socket.on('error', reject);
      socket.on('connect', () => {
        socket.destroy();
        reject(new Error('something is listening on the closed port'));
      });
    });
  }
  reset(): Promise<void> {
    return Promise.resolve();
  }
}

class SilentStore implements Store {
  readonly capabilities = capabilities;
  limit(): Promise<LimitResult> {
    return new Promise(() => undefined);
  }
  reset(): Promise<void> {
    return Promise.resolve();
  }
}

describe('the degraded-store warning has one prefix and names the store and the cause', () => {
  let warn: MockInstance<typeof console.warn>;
  let server: Server | undefined;
  beforeEach(() => {
    warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    warn.mockRestore();
    if (server !== undefined) await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });

  async function status(store: Store, timeout?: number): Promise<number> {
    const limiter = createLimiter({
      store,
      name: 'api',
      rules: fixedWindow({ limit: 5, window: '1s' }),
      circuitBreaker: false,
      ...(timeout === undefined ? {} : { timeout }),
    });
    const app = express();
    app.use(rateLimit({ limiter }));
    app.get('/', (_req, res) => void res.send('ok'));
    await new Promise<void>((resolve) => {
      server = app.listen(0, '127.0.0.1', () => resolve());
    });
    return (await fetch(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/`)).status;
  }

  it('a refused connection: the store class and ECONNREFUSED', async () => {
    const port = await closedPort();
    expect(await status(new RefusedStore(port))).toBe(200); // fails open, the default
    expect(warn).toHaveBeenCalledOnce();
    const text = String(warn.mock.calls[0]![0]);
    expect(text).toContain(
      `[sluice] store failure in limiter "api" (RefusedStore): the store failed: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    expect(text.split('[sluice]').length - 1).toBe(1);
  });

  it('a store that does not answer in time: one prefix and the store class', async () => {
    expect(await status(new SilentStore(), 20)).toBe(200);
    expect(warn).toHaveBeenCalledOnce();
    expect(String(warn.mock.calls[0]![0])).toBe(
      '[sluice] store failure in limiter "api" (SilentStore): the store did not answer within 20 ms. Pass onError to handle it.',
    );
  });
});
