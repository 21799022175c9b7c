/**
 * `sluice dashboard` in a real browser (Debian's chromium, headless, driven by puppeteer-core) over a real fleet:
 * a redis-server, three processes each deciding with a limiter named 'api' (createFleetAnalytics publishing to Redis,
 * watchConfig applying the configuration) and the dashboard served by the built CLI. The test checks what an operator
 * relies on:
 * - for every second, the counts the page renders (the chart's data-seconds) equal the sum of what the processes
 *   decided in it, outcome by outcome;
 * - clicking "shadow" on the page switches every process within 1 s;
 * - a deny entry added with the page's form reaches every process's limiter.deny, and, in enforce mode, the next
 *   request from that client to any process gets a 403 while another client's is served;
 * - a bad quota shows its validation message; the store killed shows a banner, gone once it is back;
 * - a stored deny entry no page can show as a date (written into the store directly) is listed as not valid with a
 *   remove button that removes it, and the other cards are still drawn.
 * It takes a screenshot of the page; with SLUICE_UPDATE_SCREENSHOT=1 it saves it as packages/cli/docs/dashboard.png
 * (the one the CLI's README shows), else to a temporary file, so a test run leaves the checkout as it was.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';

const CLI = fileURLToPath(new URL('../../packages/cli/dist/cli.js', import.meta.url));
const SCREENSHOT =
  process.env.SLUICE_UPDATE_SCREENSHOT === '1'
    ? fileURLToPath(new URL('../../packages/cli/docs/dashboard.png', import.meta.url))
    : join(tmpdir(), `sluice-dashboard-${process.pid}.png`);
const PROCESSES = 3;
const SWITCH_BOUND_MS = 1_000;

interface Stopped {
  outcomes: string[];
  counts: number[][];
  errors: number;
  unhandled: number;
}

let server: RedisServer;
let dashboard: ChildProcess | undefined;
let browser: Browser | undefined;
let page: Page;
let url: string;
const workers: ChildProcess[] = [];
/** Each process's HTTP port (@sluice/http's handler on its limiter, deny list enforced). */
const httpPorts: number[] = [];
/** Errors the page's script threw: none expected. */
const pageErrors: string[] = [];

function chromium(): string {
  const found = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  if (found.status !== 0 || path === '') {
    throw new Error("chromium was not found on PATH; the dashboard browser test drives Debian's chromium: apt-get install chromium");
  }
  return path;
}

function next<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null) => reject(new Error(`process ${child.pid} exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

function ask<T>(child: ChildProcess, type: string, reply: string): Promise<T> {
  const answer = next<T>(child, reply);
  child.send({ type });
  return answer;
}

/** Polls every process until `done` holds for all of them; returns the milliseconds it took, or throws past `boundMs`. */
async function untilEvery(done: (state: { mode: string; deny: string[] }) => boolean, boundMs: number, from: number): Promise<number> {
  for (;;) {
    const states = await Promise.all(workers.map((w) => ask<{ mode: string; deny: string[] }>(w, 'state', 'state')));
    const took = Date.now() - from;
    if (states.every(done)) return took;
    if (took > boundMs + 2_000) throw new Error(`not every process got there within ${took} ms: ${JSON.stringify(states)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  const executablePath = chromium();
  server = await startRedis();
  for (let i = 0; i < PROCESSES; i++) {
    workers.push(fork(new URL('./dashboard-instance.mjs', import.meta.url), [String(server.port)], { stdio: 'inherit' }));
  }
  for (const ready of await Promise.all(workers.map((w) => next<{ httpPort: number }>(w, 'ready')))) httpPorts.push(ready.httpPort);
  const child = spawn(process.execPath, [CLI, 'dashboard', '--redis', `redis://127.0.0.1:${server.port}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  dashboard = child;
  url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`sluice dashboard exited (${code})`)));
  });
  // --no-sandbox: CI runs as root, where Chromium refuses its sandbox; the page is our own.
  browser = await puppeteer.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  for (const w of workers) w.send({ type: 'start' });
  await page.goto(url);
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all(
    workers.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }),
  );
  if (dashboard !== undefined && dashboard.exitCode === null && dashboard.signalCode === null) {
    const exited = new Promise((resolve) => dashboard!.once('exit', resolve));
    dashboard.kill('SIGTERM');
    await exited;
  }
  await server?.stop();
});

describe('sluice dashboard in a browser, over three processes on one redis-server', () => {
  test('shows what the fleet decided, second by second, and its buttons and forms change every process', async () => {
    // The card appears once the fleet's first second is published (names come from the analytics store).
    await page.waitForSelector('section[data-name="api"] svg.chart[data-seconds]', { timeout: 10_000 });
    await sleep(3_000);

    const clicked = Date.now();
    await page.click('section[data-name="api"] .modes button[data-mode="shadow"]');
    const switched = await untilEvery((state) => state.mode === 'shadow', SWITCH_BOUND_MS, clicked);
    expect(switched, 'every process in shadow mode within 1 s of the click').toBeLessThanOrEqual(SWITCH_BOUND_MS);
    await page.waitForSelector('section[data-name="api"][data-mode="shadow"] .modes button.current[data-mode="shadow"]', {
      timeout: 3_000,
    });

    await page.type('section[data-name="api"] .deny-form input[name="match"]', 'user:mallory');
    await page.type('section[data-name="api"] .deny-form input[name="for"]', '1h');
    await page.type('section[data-name="api"] .deny-form input[name="reason"]', 'scraping');
    const submitted = Date.now();
    await page.click('section[data-name="api"] .deny-form button[type="submit"]');
    const denied = await untilEvery((state) => state.deny.includes('user:mallory'), SWITCH_BOUND_MS, submitted);
    expect(denied, 'the deny entry in every process within 1 s of the click').toBeLessThanOrEqual(SWITCH_BOUND_MS);
    await page.waitForSelector('section[data-name="api"] .deny tr[data-match="user:mallory"]', { timeout: 3_000 });

    // A bad quota: the page shows the validation message.
    await page.type('section[data-name="api"] .quota-form input[name="identity"]', 'acme');
    await page.type('section[data-name="api"] .quota-form input[name="rules"]', '[{"algorithm":"gcra","limit":0,"period":"1s"}]');
    await page.click('section[data-name="api"] .quota-form button[type="submit"]');
    await page.waitForSelector('section[data-name="api"] [role="status"].error', { timeout: 3_000 });
    expect(
      await page.$eval('section[data-name="api"] [role="status"]', (status) => (status as unknown as { textContent: string }).textContent),
    ).toBe('set quota acme: quotas["acme"][0]: gcra: limit must be a positive integer, got 0');
    await sleep(4_000); // some shadow-mode seconds
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    if (process.env.SLUICE_UPDATE_SCREENSHOT !== '1') rmSync(SCREENSHOT);

    // Back to enforce: the denied client's next request to any process is refused with the entry's reason (no rate
    // decision is made for it), while another client is served.
    const enforced = Date.now();
    await page.click('section[data-name="api"] .modes button[data-mode="enforce"]');
    await untilEvery((state) => state.mode === 'enforce', SWITCH_BOUND_MS, enforced);
    for (const port of httpPorts) {
      const refused = await fetch(`http://127.0.0.1:${port}/`, { headers: { 'x-user': 'mallory' } });
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ status: 403, reason: 'denied', denyReason: 'scraping' });
      const served = await fetch(`http://127.0.0.1:${port}/`, { headers: { 'x-user': 'dave' } });
      expect(served.status).toBe(200);
    }

    // Every process stops deciding and publishes all it counted; the page then shows the last of those seconds.
    const stopped = await Promise.all(workers.map((w) => ask<Stopped>(w, 'stop', 'stopped')));
    const expected = new Map<number, number[]>();
    for (const report of stopped) {
      expect([report.errors, report.unhandled]).toEqual([0, 0]);
      for (const [second, ...row] of report.counts) {
        const sum = expected.get(second!) ?? [0, 0, 0, 0, 0];
        row.forEach((count, i) => (sum[i]! += count));
        expected.set(second!, sum);
      }
    }
    const last = Math.max(...expected.keys());
    const chartTo = () => page.$eval('section[data-name="api"] svg.chart', (chart) => Number(chart.getAttribute('data-to')));
    const waitedFrom = Date.now();
    while ((await chartTo()) < last) {
      expect(Date.now() - waitedFrom, 'the page shows the last second within 8 s').toBeLessThan(8_000);
      await sleep(100);
    }
    const shown = new Map<number, number[]>(
      (
        JSON.parse(
          await page.$eval('section[data-name="api"] svg.chart', (chart) => chart.getAttribute('data-seconds') ?? '[]'),
        ) as number[][]
      ).map(([second, ...row]) => [second!, row]),
    );
    const seconds = [...expected.keys()].sort();
    for (const second of seconds) expect({ second, counts: shown.get(second) }).toEqual({ second, counts: expected.get(second) });
    // Nothing is shown that no process decided.
    expect([...shown.keys()].filter((second) => !expected.has(second))).toEqual([]);
    const totals = [...expected.values()].reduce((sum, row) => sum.map((n, i) => n + row[i]!), [0, 0, 0, 0, 0]);
    expect(totals[1], 'some decisions limited').toBeGreaterThan(0);
    expect(totals[2], 'some decisions shadow-limited').toBeGreaterThan(0);
    const top = await page.$$eval('section[data-name="api"] table.top tbody tr', (rows) => rows.map((row) => row.textContent));
    expect(top[0]).toMatch(/^mallory\d+$/);
    console.log(
      `dashboard: ${seconds.length} seconds, the page equal to the sum of ${PROCESSES} processes in each (allowed, limited, shadow-limited, shed, degraded: ${totals.join(', ')}); shadow in every process ${switched} ms after the click, the deny entry ${denied} ms after`,
    );

    // The store dies: the page says so in its banner, and clears it once Redis is back.
    await server.kill();
    await page.waitForSelector('#banner:not([hidden])', { timeout: 5_000 });
    expect(await page.$eval('#banner', (banner) => (banner as unknown as { textContent: string }).textContent)).toMatch(
      /^the store did not answer: the connection to Redis at redis:\/\/127\.0\.0\.1:\d+ is down; reconnecting every second/,
    );
    await server.restart();
    await page.waitForSelector('#banner[hidden]', { timeout: 5_000 });
    // The restart emptied the store (no persistence) and no operator deleted the document: the card says it is lost,
    // with the revision instances keep, and its button writes back the document the dashboard last read.
    const lost = 'section[data-name="api"] .lost:not([hidden]) button[data-restore]';
    await page.waitForSelector(lost, { timeout: 5_000 });
    await page.click(lost);
    await page.waitForSelector('section[data-name="api"][data-lost=""] .lost[hidden]', { timeout: 5_000 });
    const store = new Redis({ host: server.host, port: server.port });
    try {
      // The document comes back, and its deny entries into the deny structure, where the list is kept.
      expect(JSON.parse((await store.get('sluice:config:api'))!)).toMatchObject({ mode: 'enforce' });
      expect(Object.keys(await store.hgetall('sluice:deny:{api}'))).toEqual(['user:mallory']);
      // The deny list's own switch, beside the list: written to the document, shown as current.
      await page.click('section[data-name="api"] .deny-modes button[data-deny-mode="off"]');
      await page.waitForSelector('section[data-name="api"][data-deny-mode="off"] .deny-modes button.current[data-deny-mode="off"]', {
        timeout: 3_000,
      });
      expect(JSON.parse((await store.get('sluice:config:api'))!)).toMatchObject({ mode: 'enforce', denyMode: 'off' });
      await page.click('section[data-name="api"] .deny-modes button[data-deny-mode="enforce"]');
      await page.waitForSelector('section[data-name="api"][data-deny-mode="enforce"]', { timeout: 3_000 });
    } finally {
      store.disconnect();
    }
    expect(dashboard!.exitCode).toBeNull();
    expect(pageErrors).toEqual([]);
  }, 45_000);

  test('a value from the store reaches the page as text: a deny reason written as markup shows as those characters, no element', async () => {
    const markup = '<img src=x onerror=alert(1)><b>bold</b>';
    await page.type('section[data-name="api"] .deny-form input[name="match"]', 'user:markup');
    await page.type('section[data-name="api"] .deny-form input[name="reason"]', markup);
    await page.click('section[data-name="api"] .deny-form button[type="submit"]');
    const row = 'section[data-name="api"] .deny tr[data-match="user:markup"]';
    await page.waitForSelector(row, { timeout: 5_000 });
    const shown = await page.$eval(row, (tr) => ({
      reason: (tr.children[2] as unknown as { textContent: string }).textContent,
      elements: tr.children[2]!.children.length,
    }));
    expect(shown).toEqual({ reason: markup, elements: 0 });
    expect(await page.$$eval('section[data-name="api"] .deny img, section[data-name="api"] .deny b', (found) => found.length)).toBe(0);
    expect(pageErrors).toEqual([]);
  });

  test('a stored deny entry past the latest Date is listed as not valid and removable, and the other cards go on being drawn', async () => {
    const redis = new Redis({ host: server.host, port: server.port });
    try {
      // Written into the store directly, as an older version stored `deny add user:far --for 100000000d`: an until
      // past the latest time a Date holds. The page used to stop on it ("Invalid time value"), and every card after.
      const far = { match: 'user:far', until: 8_640_000_000_000_000 + 1_800_000_000_000 };
      const stored = { version: 1, revision: 1, updatedAt: 0, deny: [{ match: 'user:ok' }, far] };
      await redis.set('sluice:config:aa-broken', JSON.stringify(stored));
      await page.type('#add-name input[name="name"]', 'aa-broken');
      await page.keyboard.press('Enter');
      const skipped = 'section[data-name="aa-broken"] .deny tr[data-skipped="1"]';
      await page.waitForSelector(skipped, { timeout: 5_000 });
      const cells = await page.$$eval(`${skipped} td`, (tds) => tds.map((td) => (td as unknown as { textContent: string }).textContent));
      expect(cells.slice(0, 2)).toEqual([
        'user:far',
        expect.stringMatching(/^not valid, ignored: deny\[1\]\.until: must be an integer from 0 to 8640000000000000/),
      ]);
      expect(await page.$('section[data-name="aa-broken"] .deny tr[data-match="user:ok"]')).not.toBeNull();
      // 'aa-broken' comes first in every answer: the 'api' card after it is still drawn, poll after poll.
      const drawnTo = () => page.$eval('section[data-name="api"] svg.chart', (chart) => Number(chart.getAttribute('data-to')));
      const before = await drawnTo();
      await page.waitForFunction(
        `Number(document.querySelector('section[data-name="api"] svg.chart').getAttribute('data-to')) > ${before}`,
        { timeout: 5_000 },
      );
      expect(await page.$eval('#banner', (banner) => (banner as unknown as { hidden: boolean }).hidden)).toBe(true);
      await page.click(`${skipped} button`);
      await page.waitForFunction(`document.querySelector(${JSON.stringify(skipped)}) === null`, { timeout: 5_000 });
      // The removal moved the document's valid entries into the deny structure and left the bad one out.
      expect(JSON.parse((await redis.get('sluice:config:aa-broken'))!).deny).toBeUndefined();
      expect(Object.keys(await redis.hgetall('sluice:deny:{aa-broken}'))).toEqual(['user:ok']);
      expect(pageErrors).toEqual([]);
    } finally {
      await redis.del('sluice:config:aa-broken');
      redis.disconnect();
    }
  });

  test('the page removes the token from the address bar once loaded', async () => {
    const other = await browser!.newPage();
    try {
      await other.goto(`${url}?token=abcdefghijklmnopqrstuvwxyz`);
      // The script has run: it fills in where the dashboard reads from, after it took the token off.
      await other.waitForFunction("document.getElementById('where').textContent !== ''", { timeout: 5_000 });
      expect(new URL(other.url()).search).toBe('');
    } finally {
      await other.close();
    }
  });
});
