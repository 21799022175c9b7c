/**
 * `sluice dashboard`'s API, served by the built binary against a real redis-server: the token off loopback, the
 * cross-site guard on changes, a change through the page's API stored as `sluice config` stores it, a bad quota
 * answered with the validation message and nothing written, deny entries that are not valid written into the store
 * directly (left out, listed, removable), a deny entry checked as the CLI checks it, and a store that dies: 503 with a message while it is
 * down, the process still up, the answers back once it restarts on the same port. And the other stores: on a SQLite
 * file the sums of what instances published and the names listed from the configuration table; on Upstash (the
 * local REST fixture) the analytics published there, and documents by the names the page gives (none listed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setLimiterMode, setQuota, type DenyEntry } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { sqliteAnalyticsStore, sqliteConfigSource } from '@sluice/sqlite';
import { upstashAnalyticsStore } from '@sluice/upstash';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../../../test/harness/redis.js';
import { startUpstashFixture } from '../../../test/harness/upstash-fixture.js';
import { byMatch, storedDeny } from './run-cli.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

interface Dashboard {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

let server: RedisServer;
let redis: Redis;
const started: Dashboard[] = [];

/** Starts `sluice dashboard` on the test's redis-server and waits for the URL it prints on its first line. */
function dashboard(...args: string[]): Promise<Dashboard> {
  return dashboardOn(['--redis', `redis://127.0.0.1:${server.port}`], args);
}

function dashboardOn(store: string[], args: string[]): Promise<Dashboard> {
  const child = spawn(process.execPath, [CLI, 'dashboard', ...store, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n');
      if (line.length > 1) {
        const running = { child, url: line[0]!, stderr: () => stderr };
        started.push(running);
        resolve(running);
      }
    });
    child.once('exit', (code) => reject(new Error(`sluice dashboard exited (${code}) before printing its URL: ${stderr}`)));
  });
}

async function api(
  base: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(path, base);
  // The printed URL's token goes on as it came, for the tests that use it.
  const token = new URL(base).searchParams.get('token');
  if (token !== null && !url.searchParams.has('token')) url.searchParams.set('token', token);
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: init.headers ?? {},
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The secret the page embeds, as its script sends it back. */
async function pageSecret(base: string): Promise<string> {
  const html = await (await fetch(base)).text();
  const settings = /<script type="application\/json" id="settings">(.*?)<\/script>/.exec(html);
  expect(settings, 'the page embeds its settings').not.toBeNull();
  return (JSON.parse(settings![1]!) as { secret: string }).secret;
}

function post(base: string, secret: string, body: unknown, headers: Record<string, string> = {}) {
  return api(base, '/api/action', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sluice-token': secret, ...headers },
    body,
  });
}

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis({ host: server.host, port: server.port, lazyConnect: true, retryStrategy: () => 50 });
  redis.on('error', () => {});
});

afterAll(async () => {
  await Promise.all(
    started.map(({ child }) =>
      child.exitCode === null && child.signalCode === null
        ? new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'))
        : undefined,
    ),
  );
  redis?.disconnect();
  await server?.stop();
});

describe('sluice dashboard', () => {
  test('off loopback a token is made, printed in the URL and required on every request', async () => {
    const { url } = await dashboard('--host', '0.0.0.0');
    const printed = new URL(url);
    const token = printed.searchParams.get('token');
    expect(token).toMatch(/^[\w-]{32}$/);
    const local = `http://127.0.0.1:${printed.port}`;
    expect((await fetch(`${local}/`)).status).toBe(401);
    expect((await fetch(`${local}/api/state`)).status).toBe(401);
    expect((await fetch(`${local}/api/state?token=${token}x`)).status).toBe(401);
    expect((await fetch(`${local}/api/state`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await fetch(`${local}/api/state?token=${token}`)).status).toBe(200);
    const page = await fetch(`${local}/?token=${token}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    // A change needs the token in the header, not only in the URL.
    const change = await api(`${local}/?token=${token}`, '/api/action', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: { action: 'mode', name: 'api', mode: 'off' },
    });
    expect(change.status).toBe(403);
    expect(await redis.get('sluice:config:api')).toBeNull();
  });

  test('on loopback without a token, a change needs the page secret and the own origin, and a foreign Host is refused', async () => {
    const { url } = await dashboard();
    expect(new URL(url).hostname).toBe('127.0.0.1');
    expect((await api(url, '/api/state')).status).toBe(200);
    const secret = await pageSecret(url);
    const body = { action: 'mode', name: 'api', mode: 'shadow' };
    expect((await post(url, 'not-the-secret', body)).status).toBe(403);
    expect((await post(url, secret, body, { origin: 'https://evil.example' })).status).toBe(403);
    expect(await redis.get('sluice:config:api')).toBeNull();
    // A DNS-rebinding page reaches the server under its own name.
    const rebound = await new Promise<number>((resolve, reject) => {
      import('node:http').then(({ get }) =>
        get(`${url}api/state`, { headers: { host: 'evil.example' } }, (response) => {
          response.resume();
          resolve(response.statusCode!);
        }).once('error', reject),
      );
    });
    expect(rebound).toBe(421);
    const written = await post(url, secret, body, { origin: url.replace(/\/$/, '') });
    expect(written.status).toBe(200);
    expect(JSON.parse((await redis.get('sluice:config:api'))!)).toMatchObject({ mode: 'shadow', revision: 1 });
  });

  test('responses are no-store and cannot be framed: the page, the API and a refusal', async () => {
    const { url } = await dashboard();
    const answers = {
      page: await fetch(url),
      state: await fetch(new URL('/api/state', url)),
      refused: await fetch(new URL('/api/action', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
    };
    expect(answers.refused.status).toBeGreaterThanOrEqual(400);
    for (const [what, response] of Object.entries(answers)) {
      expect(response.headers.get('cache-control'), what).toBe('no-store');
      expect(response.headers.get('x-frame-options'), what).toBe('DENY');
      await response.arrayBuffer();
    }
    expect(answers.page.headers.get('content-security-policy')).toMatch(/(^|;\s*)frame-ancestors 'none'(;|$)/);
  });

  test('the page is self-contained: it names no asset to load, and its policy allows no other origin', async () => {
    const { url } = await dashboard();
    const response = await fetch(url);
    const html = await response.text();
    // Inline script and style only, each carrying the policy's nonce; nothing fetched but the API on its own origin.
    expect(html).toMatch(/<script nonce="[^"]+">/);
    expect(html).toMatch(/<style nonce="[^"]+">/);
    expect(html).not.toMatch(/<(script|img|iframe|link|source|video|audio|embed|object)\b[^>]*\b(src|href|data)\s*=/i);
    expect(html).not.toMatch(/@import|url\(\s*['"]?(https?:)?\/\//i);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/i);
    const policy = response.headers.get('content-security-policy')!;
    expect(policy).toMatch(/(^|;\s*)default-src 'none'(;|$)/);
    expect(policy).not.toMatch(/https?:|\*|'unsafe-inline'|'unsafe-eval'/);
  });

  test('a Redis that cannot be reached at start is an error: exit 1, with a message', async () => {
    const unused = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const child = spawn(process.execPath, [CLI, 'dashboard', '--redis', `redis://127.0.0.1:${unused}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(1);
    expect(output).toMatch(/sluice dashboard/);
    expect(output).not.toMatch(/^http:/m); // never served
  });

  test('a bad quota answers its validation message and writes nothing; a good one and a deny entry are stored', async () => {
    const { url } = await dashboard();
    const secret = await pageSecret(url);
    const before = await redis.get('sluice:config:api');
    const bad = await post(url, secret, {
      action: 'setQuota',
      name: 'api',
      identity: 'acme',
      rules: '[{"algorithm":"gcra","limit":-1,"period":"1s"}]',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/limit must be a positive integer, got -1/);
    const badDeny = await post(url, secret, { action: 'addDeny', name: 'api', match: '203.0.113.0/33' });
    expect(badDeny.status).toBe(400);
    expect(badDeny.body.error).toMatch(/is written like an IP address or CIDR block but is not one/);
    expect(await redis.get('sluice:config:api')).toBe(before);

    const quota = await post(url, secret, {
      action: 'setQuota',
      name: 'api',
      identity: 'acme',
      rules: '[{"algorithm":"gcra","limit":100,"period":"1s"}]',
    });
    expect(quota.status).toBe(200);
    const deny = await post(url, secret, { action: 'addDeny', name: 'api', match: 'user:42', for: '1h', reason: 'scraper' });
    expect(deny.status).toBe(200);
    const stored = JSON.parse((await redis.get('sluice:config:api'))!);
    expect(stored.quotas).toEqual({ acme: [{ algorithm: 'gcra', limit: 100, period: '1s' }] });
    // The entry is in the deny structure; the answer is the document as it is now, the entry in its list.
    const entries = await storedDeny(redis, 'api');
    expect(entries).toMatchObject([{ match: 'user:42', reason: 'scraper' }]);
    expect(entries[0]!.until! - entries[0]!.addedAt!).toBe(3_600_000);
    expect((deny.body.config as { deny: unknown }).deny).toEqual(entries);
    // The page's state shows the document, listed from the store though no instance published analytics for it.
    const state = await api(url, '/api/state');
    expect(state.body.limiters).toMatchObject([{ name: 'api', config: { quotas: { acme: expect.any(Array) } } }]);
  });

  test('deny entries that are not valid, written into the store directly, are left out and listed; the page can remove them; the limiters after still show', async () => {
    const good = [{ match: '203.0.113.0/24', reason: 'scraper', addedAt: 1_700_000_000_000 }];
    // Past the latest Date (8.64e15 ms) though below 2^53, as `deny add --for 100000000d` used to store it.
    const far = { match: 'user:x', until: 8_640_000_000_000_000 + 1_800_000_000_000, addedAt: 1_700_000_000_000 };
    // A document as an older release kept the list, in its deny field (no deny structure stored yet).
    const stored = { version: 1, revision: 4, updatedAt: 0, deny: [good[0], far, { match: 'key:y', until: -1 }, 'plain text'] };
    await redis.set('sluice:config:broken', JSON.stringify(stored));
    // The same kind of entries in a deny structure, as another version's writer might have put them there.
    await redis.set('sluice:config:broken-structure', JSON.stringify({ version: 1, revision: 1, updatedAt: 0 }));
    // (A reason too long rather than a past until: the store drops expired entries with each change.)
    const tooLong = { match: 'key:y', reason: 'x'.repeat(201) };
    await redisConfigSource(redis).deny.change('broken-structure', { add: [good[0]!, far, tooLong] as DenyEntry[] });
    await redis.set('sluice:config:zz-after', JSON.stringify({ version: 1, revision: 1, updatedAt: 0, mode: 'shadow' }));
    try {
      const { url } = await dashboard();
      const secret = await pageSecret(url);
      const state = await api(url, '/api/state');
      expect(state.status).toBe(200);
      const views = state.body.limiters as Array<{ name: string; config: { deny?: unknown; mode?: string } | null; denySkipped?: unknown }>;
      const broken = views.find((view) => view.name === 'broken')!;
      expect(broken.config?.deny).toEqual(good);
      expect(broken).not.toHaveProperty('configError');
      expect(broken.denySkipped).toEqual([
        { index: 1, match: 'user:x', problem: expect.stringMatching(/^deny\[1\]\.until: must be an integer from 0 to 8640000000000000/) },
        { index: 2, match: 'key:y', problem: expect.stringMatching(/^deny\[2\]\.until: must be/) },
        { index: 3, problem: expect.stringMatching(/^deny\[3\]: must be an object/) },
      ]);
      const inStructure = views.find((view) => view.name === 'broken-structure')!;
      expect(inStructure.config?.deny).toEqual(good);
      expect(byMatch(inStructure.denySkipped as Array<{ match: string }>)).toEqual([
        { index: -1, match: 'key:y', problem: expect.stringMatching(/\.reason: must be a string of at most 200 characters/) },
        { index: -1, match: 'user:x', problem: expect.stringMatching(/\.until: must be an integer from 0 to 8640000000000000/) },
      ]);
      expect(views.find((view) => view.name === 'zz-after')?.config?.mode).toBe('shadow');

      for (const match of ['user:x', 'key:y']) {
        const removed = await post(url, secret, { action: 'removeDeny', name: 'broken-structure', match });
        expect([removed.status, (removed.body.config as { deny: unknown }).deny]).toEqual([200, good]);
      }
      expect(await storedDeny(redis, 'broken-structure')).toEqual(good);
      const after = (await api(url, '/api/state')).body.limiters as Array<{ name: string; denySkipped?: unknown }>;
      expect(after.find((view) => view.name === 'broken-structure')).not.toHaveProperty('denySkipped');
    } finally {
      await redis.del('sluice:config:broken', 'sluice:config:broken-structure', 'sluice:config:zz-after');
    }
  });

  test('a deny entry from the page is checked as the CLI checks it: the match, the kind and the duration; nothing is written when refused', async () => {
    const { url } = await dashboard();
    const secret = await pageSecret(url);
    const refusals: Array<[Record<string, string>, RegExp]> = [
      [{ match: '1.2.3.4/-1' }, /^match "1\.2\.3\.4\/-1" is written like an IP address or CIDR block but is not one; give an address/],
      [{ match: 'not-an-ip/24' }, /is written like an IP address or CIDR block but is not one/],
      [{ match: ' ' }, /^addDeny: match must be a non-empty string, got " "$/],
      [{ match: 'user:1 ' }, /^match "user:1 " is empty or has spaces around it/],
      [{ match: '2001:db8::1%eth0' }, /has a zone index/],
      [{ match: '10.9.8.7/24' }, /would match the whole block 10\.9\.8\.0\/24/],
      [{ match: 'sk_live_abc' }, /is neither an address or block nor an identity with a prefix/],
      [{ match: '203.0.113.7', kind: 'identity' }, /is an IP address or block, which the HTTP layer matches as one/],
      [{ match: 'user:1', kind: 'ip' }, /^addDeny: kind must be identity .* or auto/],
      [{ match: 'user:1', for: '100000000d' }, /^for must be a duration from 1 ms to 3650d .*, got "100000000d"$/],
      [{ match: 'user:1', for: ' 1h' }, /^for must be a duration .*, got " 1h" \(no spaces around it\)$/],
      [{ match: 'user:1', for: '1.5ms' }, /\(not a whole number of ms\)$/],
    ];
    for (const [fields, message] of refusals) {
      const refused = await post(url, secret, { action: 'addDeny', name: 'form', ...fields });
      expect([refused.status, refused.body.error], JSON.stringify(fields)).toEqual([400, expect.stringMatching(message)]);
    }
    expect(await redis.keys('*form*')).toEqual([]);
    const key = await post(url, secret, { action: 'addDeny', name: 'form', match: 'sk_live_abc', kind: 'identity', for: '1h30m' });
    expect(key.status).toBe(200);
    const timed = await post(url, secret, { action: 'addDeny', name: 'form', match: '198.51.100.0/24', kind: 'auto', for: '2000' });
    expect(timed.status).toBe(200);
    const deny = await storedDeny(redis, 'form');
    expect(deny.map((entry) => [entry.match, entry.until! - entry.addedAt!])).toEqual([
      ['198.51.100.0/24', 2_000],
      ['sk_live_abc', 5_400_000],
    ]);
    await redisConfigSource(redis).deny.change('form', { clear: true });
  });

  test('with the store killed the API answers 503 with a message and the process stays up; it recovers when Redis is back', async () => {
    const dash = await dashboard();
    const secret = await pageSecret(dash.url);
    expect((await api(dash.url, '/api/state')).status).toBe(200);
    await server.kill();
    let lastError: unknown;
    for (let i = 0; i < 5; i++) {
      const state = await api(dash.url, '/api/state');
      expect(state.status).toBe(503);
      expect(state.body.error).toMatch(
        /^the store did not answer: the connection to Redis at redis:\/\/127.0.0.1:\d+ is down; reconnecting every second \(status: \w+\)$/,
      );
      lastError = state.body.error;
      const write = await post(dash.url, secret, { action: 'mode', name: 'api', mode: 'off' });
      expect(write.status).toBe(503);
      expect(write.body.error).toMatch(/nothing was written/);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(dash.child.exitCode).toBeNull();
    await server.restart();
    const deadline = Date.now() + 5_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await api(dash.url, '/api/state')).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    console.log(`while Redis was down: ${JSON.stringify(lastError)}`);
    expect((await post(dash.url, secret, { action: 'mode', name: 'api', mode: 'off' })).status).toBe(200);
    expect(dash.child.exitCode).toBeNull();
    expect(dash.stderr()).not.toMatch(/Unhandled|unhandled|at .*\.js:\d+/);
  });

  test('on SQLite: the decisions the fleet published, summed, and the limiters that only have a configuration', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'sluice-dashboard-'));
    const file = join(folder, 'fleet.db');
    const db = new Database(file);
    try {
      const second = Math.floor(Date.now() / 1000) - 5;
      const analytics = sqliteAnalyticsStore(db);
      const counts = { allowed: 7, limited: 3, shadowLimited: 0, shed: 1, degraded: 0 };
      // Two instances published the same second: the page shows their sum.
      analytics.publish('api', [{ second, counts, topLimited: [['mallory', 3]] }]);
      analytics.publish('api', [
        {
          second,
          counts,
          topLimited: [
            ['mallory', 2],
            ['bob', 1],
          ],
        },
      ]);
      await setLimiterMode(sqliteConfigSource(db), 'api', 'shadow');
      await setQuota(sqliteConfigSource(db), 'billing', 'acme', { algorithm: 'gcra', limit: 5, period: '1s' });
      const { url } = await dashboardOn(['--sqlite', file], []);
      const state = await api(url, '/api/state');
      expect(state.status).toBe(200);
      expect(state.body).toMatchObject({ analytics: true, namesListed: true });
      expect(state.body.limiters).toEqual([
        {
          name: 'api',
          seconds: [
            {
              second,
              counts: { allowed: 14, limited: 6, shadowLimited: 0, shed: 2, degraded: 0 },
              topLimited: [
                ['mallory', 5],
                ['bob', 1],
              ],
            },
          ],
          topLimited: [
            ['mallory', 5],
            ['bob', 1],
          ],
          config: expect.objectContaining({ mode: 'shadow' }),
        },
        {
          name: 'billing',
          seconds: [],
          topLimited: [],
          config: expect.objectContaining({ quotas: { acme: [expect.objectContaining({ limit: 5 })] } }),
        },
      ]);
    } finally {
      db.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  test('on Upstash: the fleet analytics published there, and configuration by name (Upstash cannot list documents), shown and changed', async () => {
    const fixture = await startUpstashFixture({ redisPort: server.port });
    try {
      await redis.set('sluice:config:edge', JSON.stringify({ version: 1, revision: 4, updatedAt: 1, mode: 'off' }));
      const second = Math.floor(Date.now() / 1000) - 5;
      const counts = { allowed: 3, limited: 2, shadowLimited: 0, shed: 0, degraded: 0 };
      await upstashAnalyticsStore({ url: fixture.url, token: fixture.token }).publish('api', [
        { second, counts, topLimited: [['eve', 2]] },
      ]);
      const { url } = await dashboardOn(['--upstash-url', fixture.url, '--upstash-token', fixture.token], []);
      const listed = await api(url, '/api/state');
      expect(listed).toMatchObject({ status: 200, body: { analytics: true, namesListed: false } });
      expect(listed.body.limiters).toEqual([
        expect.objectContaining({ name: 'api', seconds: [{ second, counts, topLimited: [['eve', 2]] }], topLimited: [['eve', 2]] }),
      ]);
      const state = await api(url, '/api/state?names=edge');
      expect(state.body.limiters).toEqual(
        expect.arrayContaining([{ name: 'edge', seconds: [], topLimited: [], config: expect.objectContaining({ mode: 'off' }) }]),
      );
      const written = await post(url, await pageSecret(url), { action: 'mode', name: 'edge', mode: 'enforce' });
      expect(written).toMatchObject({ status: 200, body: { config: { mode: 'enforce', revision: 5 } } });
    } finally {
      await fixture.close();
    }
  });
});
