/**
 * The fleet the deny-list proofs run: worker processes (deny-worker.mjs) on one redis-server, each serving HTTP
 * through @sluice/http on a limiter that watchConfig keeps current, and the built `sluice` CLI and dashboard run as
 * an operator runs them.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../packages/cli/dist/cli.js', import.meta.url));

export interface WorkerState {
  mode: string;
  denyMode: string;
  deny: string[];
  revision: number | null;
  warnings: Array<{ code: string; message: string; at: number }>;
  denied: Array<{ identity: string; shadow: boolean; reason?: string }>;
  errors: string[];
  unhandled: number;
}

export interface FleetWorker {
  child: ChildProcess;
  httpPort: number;
  label: string;
}

function next<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null) => reject(new Error(`worker ${child.pid} exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

export async function startWorkers(redisPort: number, count: number): Promise<FleetWorker[]> {
  const children = Array.from({ length: count }, () =>
    fork(new URL('./deny-worker.mjs', import.meta.url), [String(redisPort)], { stdio: 'inherit' }),
  );
  return Promise.all(
    children.map(async (child, i) => ({
      child,
      httpPort: (await next<{ httpPort: number }>(child, 'ready')).httpPort,
      label: `process ${i + 1}`,
    })),
  );
}

export async function stopWorkers(workers: readonly FleetWorker[]): Promise<void> {
  await Promise.all(
    workers.map(async ({ child }) => {
      if (child.exitCode !== null || !child.connected) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

export async function stateOf(worker: FleetWorker): Promise<WorkerState> {
  const reply = next<WorkerState>(worker.child, 'state');
  worker.child.send({ type: 'state' });
  return reply;
}

/** Waits until every worker's state passes `check` (polling), or fails after `timeoutMs` with the last states. */
export async function untilEvery(
  workers: readonly FleetWorker[],
  check: (state: WorkerState) => boolean,
  what: string,
  timeoutMs = 5_000,
): Promise<WorkerState[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(workers.map(stateOf));
    if (states.every(check)) return states;
    if (Date.now() > deadline) throw new Error(`not every process ${what} within ${timeoutMs} ms: ${JSON.stringify(states)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The status a client with this user id gets from the worker's HTTP server. */
export async function statusFor(worker: FleetWorker, user: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${worker.httpPort}/`, { headers: { 'x-user': user } });
  await response.arrayBuffer();
  return response.status;
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`sluice config ...` and the like) as a process; `input` is written to its standard input. */
export function sluice(args: readonly string[], input?: string): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    if (input !== undefined) child.stdin!.end(input);
  });
}

export interface DashboardProcess {
  child: ChildProcess;
  url: string;
  /** The secret the page embeds and sends back with every change. */
  secret: string;
  post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  state(): Promise<{ limiters: Array<Record<string, unknown>> }>;
  stop(): Promise<void>;
}

/** Starts `sluice dashboard` on the redis-server, as an operator does, and reads the secret from its page. */
export async function startDashboard(redisPort: number): Promise<DashboardProcess> {
  const child = spawn(process.execPath, [CLI, 'dashboard', '--redis', `redis://127.0.0.1:${redisPort}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`sluice dashboard exited (${code}) before printing its URL: ${stderr}`)));
  });
  const html = await (await fetch(url)).text();
  const secret = (JSON.parse(/<script type="application\/json" id="settings">(.*?)<\/script>/.exec(html)![1]!) as { secret: string })
    .secret;
  return {
    child,
    url,
    secret,
    async post(body) {
      const response = await fetch(new URL('/api/action', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sluice-token': secret },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
    async state() {
      return (await (await fetch(new URL('/api/state', url))).json()) as { limiters: Array<Record<string, unknown>> };
    },
    stop: () =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve()).kill('SIGTERM')),
  };
}
