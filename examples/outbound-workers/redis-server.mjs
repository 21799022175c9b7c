// A throwaway redis-server for the example: a free loopback port, no persistence, its own temp folder, stopped by
// its own pid. Fails loudly, naming the install command, when redis-server is not on the PATH.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const HOST = '127.0.0.1';

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port }, () => socket.write('PING\r\n'));
    socket.setTimeout(300, () => socket.destroy());
    socket.once('data', (reply) => {
      socket.end();
      resolve(reply.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

const exited = (child) => child.exitCode !== null || child.signalCode !== null;

async function untilExit(child, signal) {
  if (exited(child)) return;
  const done = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await done;
}

/** @returns {Promise<{ host: string, port: number, version: string, stop(): Promise<void> }>} */
export async function startRedisServer() {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error('redis-server was not found on PATH; this example starts its own: apt-get install redis-server (macOS: brew install redis)');
  }
  const version = /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  const dir = mkdtempSync(join(tmpdir(), 'sluice-outbound-workers-'));
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-2000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const stopOnExit = () => !exited(child) && child.kill('SIGKILL');
  process.once('exit', stopOnExit); // a crash of this script leaves no redis-server behind
  const stop = async () => {
    await untilExit(child, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (exited(child) || Date.now() > deadline) {
      await untilExit(child, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(exited(child) ? `redis-server exited with code ${child.exitCode}: ${output}` : `redis-server on port ${port} did not answer PING within 10 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { host: HOST, port, version, stop };
}
