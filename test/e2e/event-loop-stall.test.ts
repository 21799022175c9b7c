/**
 * An event-loop stall must not switch limiting off, here over real HTTP: a 400 ms synchronous handler on an
 * unlimited route, Redis healthy. The decisions of the limited requests that arrived with it were in flight when the
 * handler stalled the process; their replies waited on the socket while the deadline timer fired first, so every one
 * ended in STORE_TIMEOUT (fail open: all admitted) and the breaker opened for the next client too. Here an Express 5
 * app on a real redis-server takes 20 limited requests and a slow one together, several times: the limit must hold
 * every time.
 */
import { createLimiter, tokenBucket, type Limiter } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { redisStore } from '@sluice/redis';
import express from 'express';
import { Redis } from 'ioredis';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';

let redis: RedisServer;
let client: Redis;
let server: Server;
let url: string;
let limiter: Limiter;
const agent = new Agent({ connections: 64, pipelining: 1 });

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis({ host: redis.host, port: redis.port });
  await client.ping();
  limiter = createLimiter({ name: 'stall', store: redisStore(client), rules: tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }) });
  const app = express();
  app.get('/slow', (_req, res) => {
    const until = Date.now() + 400;
    while (Date.now() < until) {
      // a synchronous handler: nothing else in the process runs meanwhile
    }
    res.send('slow');
  });
  app.get('/api/:round', rateLimit({ limiter, identify: (req) => `round-${String(req.url)}` }), (_req, res) => {
    res.send('ok');
  });
  server = await new Promise<Server>((resolve) => {
    const s: Server = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await fetch(`${url}/api/warm-up`, { dispatcher: agent }); // a running server: script loaded, connections open
});

afterAll(async () => {
  await agent.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  client?.disconnect();
  await redis?.stop();
});

describe('an application stall does not switch limiting off (over HTTP)', () => {
  test('regression: 20 limited requests sent with a 400 ms synchronous one get exactly the limit of 5, in every round', async () => {
    const admitted: number[] = [];
    for (let round = 0; round < 5; round++) {
      const limited = Array.from({ length: 20 }, () =>
        fetch(`${url}/api/${round}`, { dispatcher: agent }).then(async (r) => (await r.text(), r.status)),
      );
      // Sent together: the server reads them in one poll phase, and the slow handler stalls it with decisions in flight.
      const slow = fetch(`${url}/slow`, { dispatcher: agent }).then((r) => r.text());
      const statuses = await Promise.all(limited);
      await slow;
      admitted.push(statuses.filter((s) => s === 200).length);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    }
    expect(admitted).toEqual([5, 5, 5, 5, 5]);
    expect(limiter.circuit).toBe('closed');
  });
});
