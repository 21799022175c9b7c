#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): starts a throwaway redis-server
// and the local Upstash REST fixture in front of it, builds the app (`next build`), serves it with `next start`
// on loopback behind a local stand-in for Vercel's edge, shows a short burst of requests, then keeps serving
// until Ctrl-C. `--once` exits after the burst. PORT (default 3000) is where the app answers.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFixtureProcess } from '../../test/harness/upstash-fixture-process.mjs';
import { startFrontProxy } from './front-proxy.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const nextBin = createRequire(import.meta.url).resolve('next/dist/bin/next');
const once = process.argv.includes('--once');
const publicPort = Number(process.env.PORT ?? 3000);
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };

function run(args, extraEnv = {}) {
  return spawn(process.execPath, [nextBin, ...args], { cwd: here, env: { ...env, ...extraEnv }, stdio: ['ignore', 'inherit', 'inherit'] });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url, child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`next start exited with code ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

console.log('building the app (next build)...');
const build = run(['build']);
const code = await new Promise((resolve) => build.once('exit', resolve));
if (code !== 0) process.exit(code ?? 1);

const fixture = await startFixtureProcess({ loader: import.meta.resolve('tsx') });
let server;
let front;
async function stop() {
  await front?.close();
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await fixture.stop();
}
process.once('SIGINT', () => void stop().then(() => process.exit(0)));
process.once('SIGTERM', () => void stop().then(() => process.exit(0)));

try {
  const nextPort = await freePort();
  // What a deployment provides: the database URL and token, read by Redis.fromEnv() at run time.
  server = run(['start', '--hostname', '127.0.0.1', '--port', String(nextPort)], {
    UPSTASH_REDIS_REST_URL: fixture.url,
    UPSTASH_REDIS_REST_TOKEN: fixture.token,
  });
  await waitForHttp(`http://127.0.0.1:${nextPort}/`, server);
  front = await startFrontProxy({ target: new URL(`http://127.0.0.1:${nextPort}`), port: publicPort });
  console.log(`\napp on ${front.url} (Next.js on 127.0.0.1:${nextPort}, Upstash REST fixture on ${fixture.url})\n`);

  const show = async (label, headers = {}) => {
    const response = await fetch(`${front.url}/api/hello`, { headers });
    const body = await response.json();
    const who = response.ok ? body.identity : `${body.title}, retry after ${response.headers.get('retry-after')} s`;
    console.log(`  ${label.padEnd(10)} ${response.status}  RateLimit: ${response.headers.get('ratelimit')}  ${who}`);
  };
  console.log(
    'RateLimit-Policy:',
    (await fetch(`${front.url}/api/hello`, { headers: { authorization: 'Bearer demo-key-bob' } })).headers.get('ratelimit-policy'),
  );
  for (let i = 0; i < 7; i++) await show('anonymous');
  await show('anonymous', { 'x-forwarded-for': '198.51.100.7', 'x-vercel-forwarded-for': '198.51.100.7' });
  for (let i = 0; i < 2; i++) await show('alice', { authorization: 'Bearer demo-key-alice' });
  const stats = await fixture.stats();
  const count = (command) => stats.byCommand[command] ?? 0;
  console.log(
    `\n11 decisions, ${stats.requests} Upstash REST requests: ${count('evalsha')} EVALSHA (one per decision; ${count('eval')} EVAL ` +
      `loaded the script into the fresh database), ${count('zincrby')} ZINCRBY from onLimited on waitUntil.`,
  );

  if (once) {
    await stop();
  } else {
    console.log(`\ntry: curl -i ${front.url}/api/hello   (Ctrl-C to stop)`);
  }
} catch (error) {
  console.error(error);
  await stop();
  process.exit(1);
}
