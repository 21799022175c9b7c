// Cloudflare Workers for real: a Hono worker (fixtures/hono-worker.ts) bundled with esbuild from the BUILT
// workspace packages, as wrangler would bundle it, and run in workerd (the binary shipped in the `workerd` npm
// package) through miniflare, each on its own HTTP port on 127.0.0.1. The worker's Upstash store talks to the
// Upstash REST fixture over a real redis-server, over workerd's own outbound fetch: nothing is mocked.
// Two Miniflare instances are two isolates of one fleet: the Upstash counts are shared, the memory ones are not.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from '@upstash/redis';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';

const here = dirname(fileURLToPath(import.meta.url));
const COMPATIBILITY_DATE = '2026-07-01';
const INSTALL =
  'miniflare runs the workerd binary from the `workerd` npm package (@cloudflare/workerd-linux-64): run `pnpm install` at the root, with workerd in pnpm.onlyBuiltDependencies';

let redisServer: RedisServer;
let fixture: UpstashFixture;
let gate: Gate;
const workers: { mf: Miniflare; url: URL }[] = [];

/** A server of the test's that holds each `/gate/<trace>` request until the test opens that gate. */
interface Gate {
  url: string;
  arrived(trace: string): Promise<void>;
  open(trace: string): void;
  close(): Promise<void>;
}

function startGate(): Promise<Gate> {
  const held = new Map<string, ServerResponse>();
  const waiters = new Map<string, () => void>();
  const server: Server = createServer((req, res) => {
    const trace = req.url!.slice('/gate/'.length);
    held.set(trace, res);
    waiters.get(trace)?.();
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        arrived: (trace) => (held.has(trace) ? Promise.resolve() : new Promise((done) => waiters.set(trace, done))),
        open: (trace) => held.get(trace)?.end('go'),
        close: () => {
          for (const res of held.values()) res.destroy();
          return new Promise((done) => server.close(() => done()));
        },
      }),
    ),
  );
}

async function bundleWorker(): Promise<string> {
  const result = await build({
    entryPoints: [join(here, 'fixtures/hono-worker.ts')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

async function startWorker(script: string, name: string): Promise<{ mf: Miniflare; url: URL }> {
  const mf = new Miniflare({
    name,
    modules: true,
    script,
    compatibilityDate: COMPATIBILITY_DATE,
    host: '127.0.0.1',
    port: 0,
    bindings: { UPSTASH_REDIS_REST_URL: fixture.url, UPSTASH_REDIS_REST_TOKEN: fixture.token, WORKER_NAME: name, GATE_URL: gate.url },
  });
  try {
    return { mf, url: await mf.ready };
  } catch (error) {
    await mf.dispose().catch(() => undefined);
    throw new Error(`workerd did not start through miniflare (${(error as Error).message}); ${INSTALL}`, { cause: error });
  }
}

beforeAll(async () => {
  redisServer = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redisServer.port });
  gate = await startGate();
  const script = await bundleWorker();
  workers.push(await startWorker(script, 'isolate-a'), await startWorker(script, 'isolate-b'));
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map(({ mf }) => mf.dispose()));
  await gate?.close();
  await fixture?.close();
  await redisServer?.stop();
});

const get = (worker: number, path: string, headers: Record<string, string> = {}) => fetch(new URL(path, workers[worker]!.url), { headers });

describe('workerd runs the worker', () => {
  it('is workerd answering on 127.0.0.1 (the navigator says so)', async () => {
    const { url } = workers[0]!;
    expect(url.hostname).toBe('127.0.0.1');
    expect(await (await get(0, '/runtime')).json()).toEqual({ userAgent: 'Cloudflare-Workers' });
    const response = await get(0, '/memory/hello', { 'cf-connecting-ip': '198.51.100.1' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true, worker: 'isolate-a', store: 'memory' });
  });
});

describe('memory store in one isolate', () => {
  it('5 allowed, then 429 with RateLimit headers, Retry-After and a problem+json body; another client is untouched', async () => {
    const client = { 'cf-connecting-ip': '203.0.113.7' };
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 7; i++) {
      const response = await get(0, '/memory/hello', client);
      statuses.push(response.status);
      remaining.push(response.headers.get('ratelimit'));
      if (response.status === 429) refused ??= response;
      else await response.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(remaining.slice(0, 5)).toEqual([4, 3, 2, 1, 0].map((r) => expect.stringContaining(`r=${r}`)));
    expect(refused!.headers.get('ratelimit-policy')).toMatch(/^"local";q=5/);
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused!.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await refused!.json()) as { status: number; title: string };
    expect(body.status).toBe(429);
    expect(typeof body.title).toBe('string');

    const other = await get(0, '/memory/hello', { 'cf-connecting-ip': '203.0.113.8' });
    expect(other.status).toBe(200);
  });

  it('is per isolate: the second isolate has its own memory, so the client gets a fresh burst there', async () => {
    const client = { 'cf-connecting-ip': '203.0.113.20' };
    const on = async (worker: number) => (await get(worker, '/memory/hello', client)).status;
    const a = [];
    for (let i = 0; i < 6; i++) a.push(await on(0));
    const b = [];
    for (let i = 0; i < 6; i++) b.push(await on(1));
    expect(a).toEqual([200, 200, 200, 200, 200, 429]);
    expect(b).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

/** 14 requests of one client alternating isolates: exactly 10 allowed for the fleet (remaining 9 to 0), then 429 from both. */
async function fleetCountsExactly(path: string, clientIp: string): Promise<void> {
  const seen: { worker: string | undefined; status: number; remaining: string | null }[] = [];
  for (let i = 0; i < 14; i++) {
    const response = await get(i % 2, path, { 'cf-connecting-ip': clientIp });
    const body = (await response.json()) as { worker?: string };
    seen.push({ worker: body.worker, status: response.status, remaining: response.headers.get('ratelimit') });
  }
  expect(seen.map((s) => s.status)).toEqual([...Array(10).fill(200), 429, 429, 429, 429]);
  expect(seen.slice(0, 10).map((s) => s.worker)).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 'isolate-a' : 'isolate-b')));
  expect(seen.slice(0, 10).map((s) => /r=(\d+)/.exec(s.remaining ?? '')?.[1])).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1', '0']);
}

describe('Upstash store across two isolates sharing the Upstash REST fixture', () => {
  it('counts are exact for the fleet: 10 allowed in all, alternating isolates, then 429 from both', async () => {
    const before = fixture.stats.redisCommands;
    await fleetCountsExactly('/upstash/hello', '2001:db8::42');
    // The decisions really went through the fixture to redis-server.
    expect(fixture.stats.redisCommands - before).toBeGreaterThanOrEqual(14);
  });
});

describe('the Upstash store on its own REST client ({ url, token }), no @upstash/redis, across two isolates', () => {
  it('counts are exact for the fleet: 10 allowed in all, alternating isolates, then 429 from both, one EVALSHA each', async () => {
    const before = fixture.stats.byCommand.evalsha ?? 0;
    await fleetCountsExactly('/rest/hello', '2001:db8::43');
    expect((fixture.stats.byCommand.evalsha ?? 0) - before).toBe(14);
  });
});

describe('the tiered store (deny cache) over the own REST client, in two isolates', () => {
  it("exact for the fleet (10 allowed in all, then 429 from both), and a refused client is then answered from each isolate's memory", async () => {
    const client = { 'cf-connecting-ip': '203.0.113.44' };
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await get(i % 2, '/tiered/hello', client)).status);
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
    // Each isolate has seen its refusal: the next ones are replayed locally until retryAt, no request to Upstash.
    const before = fixture.stats.requests;
    const replayed: Response[] = [];
    for (let i = 0; i < 6; i++) replayed.push(await get(i % 2, '/tiered/hello', client));
    expect(replayed.map((r) => r.status)).toEqual(Array(6).fill(429));
    expect(replayed.every((r) => /r=0/.test(r.headers.get('ratelimit') ?? '') && Number(r.headers.get('retry-after')) > 0)).toBe(true);
    expect(fixture.stats.requests - before).toBe(0);
    // Another client is not refused by that memory.
    expect((await get(0, '/tiered/hello', { 'cf-connecting-ip': '203.0.113.45' })).status).toBe(200);
  });
});

describe('ctx.waitUntil carries background work past the response', () => {
  it("onDecision's write lands after the response was sent: held at the gate while the client reads it, then written", async () => {
    const trace = `t${Date.now()}`;
    const response = await get(1, '/upstash/hello', { 'cf-connecting-ip': '198.51.100.77', 'x-trace': trace });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ worker: 'isolate-b' });

    // The response is in hand; the background work is still waiting at the gate, nothing is written yet.
    await gate.arrived(trace);
    const redis = new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false });
    expect(await redis.lrange(`trace:${trace}`, 0, -1)).toEqual([]);

    gate.open(trace);
    const deadline = Date.now() + 15_000;
    let written: unknown[] = [];
    while (written.length === 0 && Date.now() < deadline) {
      written = await redis.lrange(`trace:${trace}`, 0, -1);
      if (written.length === 0) await new Promise((r) => setTimeout(r, 25));
    }
    expect(written).toEqual([{ worker: 'isolate-b', allowed: true, status: 200 }]);
  });

  it('the control: the same work not handed to waitUntil is cancelled by workerd once the response is sent', async () => {
    const trace = `u${Date.now()}`;
    const response = await get(0, `/unawaited/${trace}`);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    await gate.arrived(trace);
    gate.open(trace);
    await new Promise((r) => setTimeout(r, 1_000));
    const redis = new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false });
    expect(await redis.lrange(`trace:${trace}`, 0, -1)).toEqual([]);
  });
});
