// The outbound suite's own redis-server: a free loopback port, no persistence, a temp folder, stopped by its pid.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('PING\r\n'));
    socket.setTimeout(300, () => socket.destroy());
    socket.once('data', (reply) => {
      socket.end();
      resolve(reply.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

/** @returns {Promise<{ port: number, pid: number, version: string, stop: () => Promise<void> }>} */
export async function startRedisServer() {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH; the outbound suite starts its own: apt-get install redis-server (macOS: brew install redis)',
    );
  }
  const version = /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-outbound-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server on port ${port} did not answer PING within 10 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { port, pid: child.pid, version, stop };
}
