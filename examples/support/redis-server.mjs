// A throwaway redis-server for the examples that need one: a free port on 127.0.0.1, no persistence, its own temp
// folder, stopped by its own pid. It never touches a Redis you already run, and a missing binary is a loud error
// naming the install command. `kill()` and `restart()` (same port, empty data) are the outage some examples show.
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
    const socket = createConnection({ host: HOST, port }, () => socket.write('PING\r\n'));
    let done = false;
    const finish = (ok) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(300, () => finish(false));
    socket.once('data', (reply) => finish(reply.toString().startsWith('+PONG')));
    socket.once('error', () => finish(false));
    socket.once('close', () => finish(false));
  });
}

const exited = (child) => child.exitCode !== null || child.signalCode !== null;

/** Signals the child by its own pid and waits until it is gone. */
async function untilExit(child, signal) {
  if (child === undefined || exited(child)) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  process.kill(child.pid, signal);
  await gone;
}

/**
 * @param {{ name?: string }} [options] `name` labels the temp folder (sluice-<name>-…)
 * @returns {Promise<{ host: string, port: number, readonly pid: number, version: string, kill(): Promise<void>, restart(): Promise<void>, stop(): Promise<void> }>}
 */
export async function startRedisServer({ name = 'example' } = {}) {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH; this example starts its own on 127.0.0.1: apt-get install redis-server (macOS: brew install redis)',
    );
  }
  const version = /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  const dir = mkdtempSync(join(tmpdir(), `sluice-${name}-`));
  const port = await freeLoopbackPort();
  const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir];
  let child;
  let log = '';
  const launch = async () => {
    child = spawn('redis-server', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk) => (log = (log + chunk).slice(-2000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const deadline = Date.now() + 10_000;
    while (!(await answersPing(port))) {
      if (exited(child) || Date.now() > deadline) {
        throw new Error(`redis-server on ${HOST}:${port} did not come up (exit code ${child.exitCode}): ${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  // If this script dies on an exception, its redis-server goes with it.
  const killOnExit = () => {
    if (child !== undefined && !exited(child)) process.kill(child.pid, 'SIGKILL');
  };
  process.once('exit', killOnExit);
  try {
    await launch();
  } catch (error) {
    await untilExit(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    host: HOST,
    port,
    version,
    get pid() {
      return child.pid;
    },
    /** SIGKILL: connections drop at once and the data is gone, as in a crash. */
    kill: () => untilExit(child, 'SIGKILL'),
    /** A fresh, empty server on the same port. */
    restart: async () => {
      await untilExit(child, 'SIGKILL');
      await launch();
    },
    stop: async () => {
      await untilExit(child, 'SIGTERM');
      process.removeListener('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
