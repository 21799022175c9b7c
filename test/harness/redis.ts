/**
 * Real Redis for tests: a redis-server (or a three-master Redis Cluster) started on free loopback ports, with
 * the faults the failure-policy tests need (kill, SIGSTOP/SIGCONT, restart on the same port). Every server is
 * stopped by its own pid; nothing else on the machine is touched (never the redis on 6379).
 * A missing binary is a loud error naming the install command, never a skip.
 */
import { spawn, spawnSync, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const HOST = '127.0.0.1';
const INSTALL = 'install it: apt-get install redis-server';
const READY_TIMEOUT_MS = 10_000;

/** Throws when redis-server or redis-cli is not on PATH, naming the fix. */
export function requireRedisBinaries(): void {
  for (const binary of ['redis-server', 'redis-cli']) {
    const found = spawnSync(binary, ['--version'], { stdio: 'ignore' });
    if (found.error !== undefined || found.status !== 0) {
      throw new Error(`${binary} was not found on PATH; the Redis suites start their own servers, ${INSTALL}`);
    }
  }
}

/** Every server this process started, killed on exit so a crashed test run leaves no redis-server behind. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

/**
 * A port that is free now for us (and, with `busPort`, its cluster bus port +10000 too). A cluster node's pair is
 * drawn below the kernel's range of local ports for outgoing connections (Linux: 32768 and up), so a client socket
 * of another test cannot take it between this check and the node's bind.
 */
export async function freePort(busPort = false): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = busPort ? CLUSTER_PORTS_FROM + Math.floor(Math.random() * CLUSTER_PORTS) : await ephemeralPort();
    if (!busPort || ((await isFree(port)) && (await isFree(port + 10_000)))) return port;
  }
  throw new Error('no free port pair found for a Redis Cluster node');
}

/** Cluster node ports: 12000 to 22767, their bus ports 22000 to 32767, all below the local port range. */
const CLUSTER_PORTS_FROM = 12_000;
const CLUSTER_PORTS = 10_768;

function ephemeralPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** Sends one inline command and returns the raw reply text; rejects on connection errors or after `timeoutMs`. */
/** Whether nothing listens on 127.0.0.1:`port` any more (a connection is refused): an example stopped what it started. */
export function portIsClosed(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done(false);
    });
    socket.once('error', () => done(true));
  });
}

export function rawCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: HOST, port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply to ${command} from ${HOST}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk: string) => {
      data += chunk;
      if (complete(data)) {
        clearTimeout(timer);
        socket.end();
        resolve(data);
      }
    });
  });
}

/** Whether a RESP reply of the simple kinds we send (status, error, integer, bulk) has fully arrived. */
function complete(reply: string): boolean {
  if (reply.startsWith('$')) {
    const header = reply.indexOf('\r\n');
    if (header < 0) return false;
    const length = Number(reply.slice(1, header));
    return length < 0 || reply.length >= header + 2 + length + 2;
  }
  return reply.endsWith('\r\n');
}

async function waitFor(check: () => Promise<boolean>, what: string, child?: ChildProcess, stderr?: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child !== undefined && child.exitCode !== null) {
      throw new Error(`${what}: redis-server exited with code ${child.exitCode}: ${stderr?.() ?? ''}`);
    }
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what}: not ready within ${READY_TIMEOUT_MS} ms`);
}

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** Pid of the current process (changes on restart). */
  readonly pid: number;
  /** SIGSTOP: the server keeps its connections but answers nothing (a hang). */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** SIGKILL, no shutdown: connections drop at once, the port closes, data is gone (no persistence). */
  kill(): Promise<void>;
  /** Starts a fresh server on the same port (after `kill()`), and waits for PING. */
  restart(): Promise<void>;
  /** Stops the server by pid and removes its folder. Safe to call twice. */
  stop(): Promise<void>;
}

interface NodeProcess {
  child: ChildProcess;
  output: () => string;
}

function spawnServer(args: string[], cwd: string): NodeProcess {
  const child = spawn('redis-server', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.once('error', (error) => {
    output += String(error);
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return { child, output: () => output };
}

async function killChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    child.kill('SIGCONT'); // a paused server cannot act on SIGTERM
    child.kill(signal);
  } catch {
    return;
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts a throwaway redis-server on a free loopback port: no persistence (`--save ''`, `--appendonly no`),
 * its own temp folder, bound to 127.0.0.1 only. Waits until it answers PING.
 */
export async function startRedis(extraArgs: readonly string[] = []): Promise<RedisServer> {
  requireRedisBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    try {
      return await serverOn(port, dir, extraArgs);
    } catch (error) {
      lastError = error; // lost a race for the port: pick another
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

async function serverOn(port: number, dir: string, extraArgs: readonly string[]): Promise<RedisServer> {
  const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs];
  let node = spawnServer(args, dir);
  const ready = async (current: NodeProcess) =>
    waitFor(
      async () => (await rawCommand(port, 'PING', 200)).startsWith('+PONG'),
      `redis-server on port ${port}`,
      current.child,
      current.output,
    );
  try {
    await ready(node);
  } catch (error) {
    await killChild(node.child, 'SIGKILL');
    throw error;
  }
  let stopped = false;
  return {
    host: HOST,
    port,
    get pid() {
      return node.child.pid!;
    },
    pause: () => void node.child.kill('SIGSTOP'),
    resume: () => void node.child.kill('SIGCONT'),
    kill: () => killChild(node.child, 'SIGKILL'),
    async restart() {
      await killChild(node.child, 'SIGKILL');
      node = spawnServer(args, dir);
      await ready(node);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await killChild(node.child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisCluster {
  /** Seed nodes for `new Cluster(nodes)`. */
  readonly nodes: ReadonlyArray<{ host: string; port: number }>;
  readonly pids: readonly number[];
  /** Stops every node by pid and removes the cluster's folder. */
  stop(): Promise<void>;
}

function redisCli(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', args, { timeout: 20_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`redis-cli ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * Starts a Redis Cluster of three masters and no replicas on free loopback ports (each port + 10000 free for
 * the cluster bus), joins them with `redis-cli --cluster create`, and waits for cluster_state:ok on every node.
 */
export async function startCluster(): Promise<RedisCluster> {
  requireRedisBinaries();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await clusterOnFreePorts();
    } catch (error) {
      lastError = error;
      // Lost a race for a port (another process bound it after the check): the whole cluster again, elsewhere.
      if (!String((error as Error).message).includes('Address already in use')) throw error;
    }
  }
  throw lastError;
}

async function clusterOnFreePorts(): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
  const nodes: NodeProcess[] = [];
  const ports: number[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => killChild(n.child, 'SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      let port = await freePort(true);
      while (ports.includes(port)) port = await freePort(true);
      ports.push(port);
      const args = [
        '--port',
        String(port),
        '--bind',
        HOST,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '5000',
      ];
      nodes.push(spawnServer(args, dir));
    }
    await Promise.all(
      nodes.map((node, i) =>
        waitFor(
          async () => (await rawCommand(ports[i]!, 'PING', 200)).startsWith('+PONG'),
          `cluster node ${ports[i]}`,
          node.child,
          node.output,
        ),
      ),
    );
    await redisCli(['--cluster', 'create', ...ports.map((p) => `${HOST}:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    await Promise.all(
      ports.map((port) =>
        waitFor(async () => (await rawCommand(port, 'CLUSTER INFO', 500)).includes('cluster_state:ok'), `cluster_state:ok on ${port}`),
      ),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: ports.map((port) => ({ host: HOST, port })), pids: nodes.map((n) => n.child.pid!), stop };
}
