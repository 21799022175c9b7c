/**
 * Starting a fixture server in a real runtime (Bun, Deno) from the npm packages `bun` and `deno`, which the
 * suites package installs (`pnpm install`, their postinstall allowed in the root package.json). The binaries are
 * spawned directly, not through node_modules/.bin (a shell wrapper for bun, a node launcher for deno), so the pid
 * the test stops is the runtime's own. A missing binary is a loud failure naming the install command.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const suitesDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const INSTALL =
  'run `pnpm install` at the repository root (the suites package has `bun` and `deno` as devDependencies; their postinstall, allowed by pnpm.onlyBuiltDependencies, puts the binary in place)';
const READY_TIMEOUT_MS = 20_000;

const BINARIES = {
  bun: join(suitesDir, 'node_modules/bun/bin/bun.exe'),
  deno: join(suitesDir, 'node_modules/deno/deno'),
} as const;

/** The runtime's binary, checked to run (`--version`); throws with the install command when it does not. */
export function runtimeBinary(runtime: keyof typeof BINARIES): { path: string; version: string } {
  const path = BINARIES[runtime];
  const wrapper = join(suitesDir, 'node_modules/.bin', runtime);
  if (!existsSync(wrapper) || !existsSync(path)) {
    throw new Error(`${runtime} was not found (${existsSync(wrapper) ? path : wrapper} is missing): ${INSTALL}`);
  }
  const run = spawnSync(path, ['--version'], { encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' } });
  if (run.error !== undefined || run.status !== 0) {
    throw new Error(`${path} --version failed (${String(run.error ?? run.stderr)}): ${INSTALL}`);
  }
  return { path, version: run.stdout.trim() };
}

export interface RuntimeServer {
  readonly url: string;
  readonly pid: number;
  /** What the server reported from inside: its runtime and version (Bun.version, Deno.version.deno), the app's limit. */
  readonly reported: { runtime: string; version: string; limit: number };
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM by pid (SIGKILL after 3 s); safe to call twice. */
  stop(): Promise<void>;
}

/** Spawns `binary args`, reads the ready line `{"runtime","version","limit","port"}` from stdout, and returns the server. */
export async function startRuntimeServer(binary: string, args: readonly string[], env: Record<string, string>): Promise<RuntimeServer> {
  const child = spawn(binary, args, { cwd: suitesDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-8000)));
  process.once('exit', () => child.kill('SIGKILL'));

  const ready = await new Promise<{ runtime: string; version: string; limit: number; port: number }>((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`${binary} ${args.join(' ')}: no ready line within ${READY_TIMEOUT_MS} ms; stderr: ${stderr}`)),
      READY_TIMEOUT_MS,
    );
    const check = () => {
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined || !stdout.includes('\n')) return;
      clearTimeout(timer);
      done(JSON.parse(line) as { runtime: string; version: string; limit: number; port: number });
    };
    child.stdout!.on('data', check);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`${binary} ${args.join(' ')} exited (${code ?? signal}) before listening; stderr: ${stderr}`));
    });
  });
  return {
    url: `http://127.0.0.1:${ready.port}`,
    pid: child.pid!,
    reported: { runtime: ready.runtime, version: ready.version, limit: ready.limit },
    stderr: () => stderr,
    stop: () => stopChild(child),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  process.kill(child.pid!, 'SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}
