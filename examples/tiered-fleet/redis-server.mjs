// A throwaway redis-server for the fleet: a free port on 127.0.0.1, no persistence, its own temp folder, stopped by
// its own pid. It never touches a Redis you already run.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const HOST = '127.0.0.1';

/** A port the kernel just handed out on the loopback interface (free now; redis-server takes it a moment later). */
function freeLoopbackPort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, HOST, () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** True once something on the port answers PING with +PONG. */
function answersPing(port) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (ok) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(ok);
    };
    const socket = createConnection({ host: HOST, port }, () => socket.write('PING\r\n'));
    socket.setTimeout(300, () => finish(false));
    socket.once('data', (reply) => finish(reply.toString().startsWith('+PONG')));
    socket.once('error', () => finish(false));
    socket.once('close', () => finish(false));
  });
}

/** @returns {Promise<{ host: string, port: number, pid: number, version: string, stop(): Promise<void> }>} */
export async function startRedisServer() {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error('redis-server was not found on PATH; this example starts its own on 127.0.0.1: apt-get install redis-server (macOS: brew install redis)');
  }
  const version = /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tiered-fleet-'));
  const port = await freeLoopbackPort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (chunk) => (log = (log + chunk).slice(-2000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  // If this script dies on an exception, its redis-server goes with it.
  const killOnExit = () => {
    if (!gone()) process.kill(child.pid, 'SIGKILL');
  };
  process.once('exit', killOnExit);

  const stop = async (signal = 'SIGTERM') => {
    if (!gone()) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid, signal);
      await exited;
    }
    process.removeListener('exit', killOnExit);
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  while (!(await answersPing(port))) {
    if (gone() || Date.now() > deadline) {
      await stop('SIGKILL');
      throw new Error(`redis-server on 127.0.0.1:${port} did not come up (exit code ${child.exitCode}): ${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { host: HOST, port, pid: child.pid, version, stop: () => stop('SIGTERM') };
}
