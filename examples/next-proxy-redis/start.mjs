#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): builds the app (`next build`),
// starts a throwaway redis-server on a free port, serves the app with `next start` on loopback behind a local
// reverse proxy that appends X-Forwarded-For (as nginx does), shows a short burst of requests, then keeps
// serving until Ctrl-C. `--once` exits after the burst. PORT (default 3000) is where the app answers.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startFrontProxy } from './front-proxy.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const nextBin = createRequire(import.meta.url).resolve('next/dist/bin/next');
const once = process.argv.includes('--once');
const publicPort = Number(process.env.PORT ?? 3000);
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };

if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.error('redis-server was not found on PATH; this example starts its own: apt-get install redis-server');
  process.exit(1);
}

function next(args, extraEnv = {}) {
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

async function waitFor(check, what, child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}`);
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what} was not ready within ${timeoutMs} ms`);
}

console.log('building the app (next build)...');
const build = next(['build']);
const code = await new Promise((resolve) => build.once('exit', resolve));
if (code !== 0) process.exit(code ?? 1);

// A throwaway redis-server: loopback only, no persistence, its own temp folder.
const redisDir = mkdtempSync(join(tmpdir(), 'sluice-next-proxy-redis-'));
const redisPort = await freePort();
const redis = spawn(
  'redis-server',
  ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir],
  {
    stdio: 'ignore',
  },
);
let server;
let front;
async function stopChild(child) {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
async function stop() {
  await front?.close();
  await stopChild(server);
  await stopChild(redis);
  rmSync(redisDir, { recursive: true, force: true });
}
process.once('SIGINT', () => void stop().then(() => process.exit(0)));
process.once('SIGTERM', () => void stop().then(() => process.exit(0)));

try {
  const redisUp = () =>
    new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port: redisPort }, () => socket.write('PING\r\n'));
      socket.setTimeout(500, () => socket.destroy());
      socket.once('data', (reply) => {
        socket.end();
        resolve(reply.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
      socket.once('close', () => resolve(false));
    });
  await waitFor(redisUp, 'redis-server', redis, 10_000);

  const nextPort = await freePort();
  server = next(['start', '--hostname', '127.0.0.1', '--port', String(nextPort)], { REDIS_URL: `redis://127.0.0.1:${redisPort}` });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${nextPort}/`)).ok, 'next start', server);
  front = await startFrontProxy({ target: new URL(`http://127.0.0.1:${nextPort}`), port: publicPort });
  console.log(`\napp on ${front.url} (Next.js on 127.0.0.1:${nextPort}, redis-server on 127.0.0.1:${redisPort})\n`);

  const show = async (label, headers = {}) => {
    const response = await fetch(`${front.url}/api/hello`, { headers });
    const body = await response.json();
    const note = response.ok ? '' : `  ${body.title}, retry after ${response.headers.get('retry-after')} s`;
    console.log(`  ${label.padEnd(10)} ${response.status}  RateLimit: ${response.headers.get('ratelimit')}${note}`);
  };
  const first = await fetch(`${front.url}/api/hello`, { headers: { authorization: 'Bearer demo-key-bob' } });
  console.log('RateLimit-Policy:', first.headers.get('ratelimit-policy'));
  for (let i = 0; i < 5; i++) await show('anonymous');
  await show('anonymous', { 'x-forwarded-for': '198.51.100.7' });
  for (let i = 0; i < 2; i++) await show('alice', { authorization: 'Bearer demo-key-alice' });
  const reader = new Redis({ host: '127.0.0.1', port: redisPort });
  const logged = await reader.xrange('sluice:limited', '-', '+');
  reader.disconnect();
  console.log(`\nrefusals in the sluice:limited stream (written by onLimited on waitUntil): ${logged.map(([, f]) => f[1]).join(', ')}`);

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
