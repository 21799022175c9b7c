/**
 * The case of the article 'Rate limiting with Redis', on the configuration packages/http/README.md shows for a
 * fleet, as written there: workers calling a third party that allows 50 requests in any sliding second, through
 * createThrottledFetch on thirdPartyLimit({ requests: 50, per: '1s' }) in Redis, learning as a fleet
 * (`learn: { source: redisConfigSource(redis) }`) with watchConfig on the same source, every other option at its
 * default. A mock third party (./mock-api.ts) on 127.0.0.1 enforces its limit on its own clock; 8 worker processes
 * × 4 loops (./outbound-worker.mjs) share one redis-server this suite starts.
 *
 * Each run starts cold (new processes that have booked and sent nothing) and is judged whole, from the first request
 * the third party sees: no 429 and no sliding second over 50 before the drop, at least 80% of the 50 per second
 * answered before it; then the third party halves its limit, once with bare 429s (Retry-After only) and once stating
 * it in X-RateLimit-Limit, and the fleet must stop being refused within a bound and use at least 80% of the new
 * limit, never over it, once settled. The workers have no code for any of it: the throttled fetch does it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { maxInSlidingSecond, startMockApi, type MockApi, type MockRequest } from './mock-api.js';

const WORKERS = 8;
const JOBS = 4;
const LIMIT = 50;
const LOWER = 25;
const STEADY_MS = 6000;
const AFTER_MS = 8000;

interface WorkerRecord {
  began: number;
  answered: number;
  status: number;
}
interface Done {
  type: 'done';
  records: WorkerRecord[];
  errors: string[];
}

let server: RedisServer | undefined;
let mock: MockApi;
let children: ChildProcess[] = [];

function message<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type === type) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`worker ${child.pid} exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function stopChildren(): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
  children = [];
}

/** Forks a cold fleet (limiter name `name`), runs it from a second from now, and the drop at STEADY_MS after that. */
async function run(name: string, dropTo: (dropAt: number) => void) {
  mock.clear();
  for (let i = 0; i < WORKERS; i++)
    children.push(
      fork(new URL('./outbound-worker.mjs', import.meta.url), [String(server!.port), mock.url, String(JOBS), name], { stdio: 'inherit' }),
    );
  await Promise.all(children.map((child) => message(child, 'ready')));
  const startAt = Date.now() + 1000;
  const dropAt = startAt + STEADY_MS;
  const until = dropAt + AFTER_MS;
  dropTo(dropAt);
  const replies = children.map((child) => message<Done>(child, 'done'));
  children.forEach((child) => child.send({ type: 'run', startAt, until }));
  const done = await Promise.all(replies);
  await stopChildren();
  return {
    startAt,
    dropAt,
    until,
    records: done.flatMap((d) => d.records),
    errors: done.flatMap((d) => d.errors),
    requests: [...mock.requests],
  };
}

/** The whole run as the third party saw it, from its first request. */
function judge(requests: readonly MockRequest[], startAt: number, dropAt: number, until: number) {
  const first = requests[0]?.at ?? startAt;
  const before = requests.filter((r) => r.at < dropAt);
  const after = requests.filter((r) => r.at >= dropAt);
  const refusedAfter = after.filter((r) => r.status === 429);
  const lastRefusal = refusedAfter.at(-1)?.at;
  const settledFrom = (lastRefusal ?? dropAt) + 1000;
  const settled = requests.filter((r) => r.at > settledFrom && r.at <= until);
  const perSecond: string[] = [];
  for (let t = startAt; t < until; t += 1000) {
    const inSecond = requests.filter((r) => r.at >= t && r.at < t + 1000);
    const refused = inSecond.filter((r) => r.status === 429).length;
    perSecond.push(`${inSecond.length - refused}${refused > 0 ? `+${refused}` : ''}`);
  }
  return {
    firstMs: first - startAt,
    refusedBefore: before.filter((r) => r.status === 429).length,
    maxBefore: maxInSlidingSecond(before.map((r) => r.at)),
    useBefore: before.filter((r) => r.status === 200).length / ((LIMIT * (dropAt - first)) / 1000),
    refusedAfter: refusedAfter.length,
    lastRefusalMs: lastRefusal === undefined ? undefined : lastRefusal - dropAt,
    settledMs: until - settledFrom,
    useSettled: settled.filter((r) => r.status === 200).length / ((LOWER * (until - settledFrom)) / 1000),
    maxSettled: maxInSlidingSecond(settled.map((r) => r.at)),
    perSecond: perSecond.join(' '),
  };
}

function report(title: string, seen: ReturnType<typeof judge>): void {
  console.log(
    `${title}\n` +
      `answered(+refused) per second from the start: ${seen.perSecond}\n` +
      `first request ${seen.firstMs} ms after the start; before the drop: ${seen.refusedBefore} 429s, most in one sliding second ${seen.maxBefore}, ` +
      `${(seen.useBefore * 100).toFixed(1)}% of ${LIMIT}/s answered; after it: ${seen.refusedAfter} 429s, the last ${seen.lastRefusalMs ?? '-'} ms after the drop; ` +
      `settled ${seen.settledMs} ms: ${(seen.useSettled * 100).toFixed(1)}% of ${LOWER}/s answered, most in one sliding second ${seen.maxSettled}`,
  );
}

/** What both drops are judged on: the run before the drop, and the settled stretch after it. */
function expectWholeRun(seen: ReturnType<typeof judge>, errors: readonly string[]): void {
  expect(errors).toEqual([]);
  expect(seen.refusedBefore).toBe(0);
  expect(seen.maxBefore).toBeLessThanOrEqual(LIMIT);
  // The default margin (100 ms) leaves 1000 / 1100 = 90.9% of the allowance usable; at least 80% of it is answered.
  expect(seen.useBefore).toBeGreaterThanOrEqual(0.8);
  // The drop was felt, and once settled the fleet uses the new limit and never goes over it.
  expect(seen.refusedAfter).toBeGreaterThan(0);
  expect(seen.settledMs).toBeGreaterThanOrEqual(2000);
  expect(seen.maxSettled).toBeLessThanOrEqual(LOWER);
  expect(seen.useSettled).toBeGreaterThanOrEqual(0.8);
}

beforeAll(async () => {
  server = await startRedis();
  mock = await startMockApi(LIMIT);
  // The third party is a server that has been running: its request handling is compiled before the fleet calls it
  // (from this process; each run forgets these). The workers start cold.
  for (let i = 0; i < 50; i++) await (await fetch(`${mock.url}/warm-up`)).text();
});

afterEach(stopChildren);

afterAll(async () => {
  await stopChildren();
  await mock?.close();
  await server?.stop();
});

describe(`${WORKERS} cold worker processes × ${JOBS} loops on the README's fleet configuration, a third party allowing ${LIMIT} in any sliding second`, () => {
  test(`the third party halves its limit with bare 429s after ${STEADY_MS / 1000} s: no 429 and no second over ${LIMIT} before, >= 80% of it used from the first request; the fleet, learning through Redis, is refused no more from 8 s after the drop on, cuts once per window, and uses >= 80% of ${LOWER}/s once settled`, async () => {
    const name = `outbound-bare-${Date.now()}`;
    // Every write of the limiter's configuration document, read as it is announced (each write PUBLISHes on its key).
    const key = `sluice:config:${name}`;
    const documents: Array<{ revision: number; updatedAt: number; limit: number | undefined }> = [];
    const reader = new Redis({ host: '127.0.0.1', port: server!.port });
    const subscriber = new Redis({ host: '127.0.0.1', port: server!.port });
    let reads = Promise.resolve();
    const identity = new URL(mock.url).host;
    subscriber.on('message', () => {
      reads = reads.then(async () => {
        const text = await reader.get(key);
        if (text === null) return;
        const document = JSON.parse(text) as { revision: number; updatedAt: number; quotas?: Record<string, Array<{ limit: number }>> };
        if (documents.at(-1)?.revision !== document.revision)
          documents.push({ revision: document.revision, updatedAt: document.updatedAt, limit: document.quotas?.[identity]?.[0]?.limit });
      });
    });
    await subscriber.subscribe(key);
    try {
      const { startAt, dropAt, until, errors, requests } = await run(name, (at) => mock.setLimit(LOWER, at));
      await reads;
      const seen = judge(requests, startAt, dropAt, until);
      report(
        `outbound, bare 429s: ${LIMIT}/s → ${LOWER}/s at ${STEADY_MS / 1000} s; stored limits: ${documents.map((d) => `r${d.revision} ${d.limit ?? LIMIT}/s at +${d.updatedAt - dropAt} ms`).join(', ')}`,
        seen,
      );
      expectWholeRun(seen, errors);
      // A bound on convergence, not a speed: on an idle machine the one cut lands within a second of the drop; on a
      // loaded one a lone 429 from a late send after it cuts once more (a window later at the earliest).
      expect(seen.lastRefusalMs).toBeLessThanOrEqual(8000);
      // Cuts are shared: every write was seen (consecutive revisions), none less than one window (1 s, the rule's
      // period at the least) after the one before on the writers' clocks, the last at most the new limit.
      expect(documents.length).toBeGreaterThan(0);
      expect(documents.map((d) => d.revision)).toEqual(documents.map((_, i) => i + 1));
      for (let i = 1; i < documents.length; i++) expect(documents[i]!.updatedAt - documents[i - 1]!.updatedAt).toBeGreaterThanOrEqual(1000);
      expect(documents.at(-1)!.limit).toBeLessThanOrEqual(LOWER);
    } finally {
      subscriber.disconnect();
      reader.disconnect();
    }
  }, 60_000);

  test(`the third party halves its limit and states it in X-RateLimit-Limit: the same judgement before the drop, and no 429 from 3 s after it on`, async () => {
    const { startAt, dropAt, until, errors, requests } = await run(`outbound-stated-${Date.now()}`, (at) => {
      mock.setLimit(LOWER, at);
      mock.statesLimit(true);
    });
    const seen = judge(requests, startAt, dropAt, until);
    report(`outbound, stated limit: ${LIMIT}/s → ${LOWER}/s at ${STEADY_MS / 1000} s, in X-RateLimit-Limit on every answer`, seen);
    expectWholeRun(seen, errors);
    expect(seen.lastRefusalMs).toBeLessThanOrEqual(3000);
  }, 60_000);
});
