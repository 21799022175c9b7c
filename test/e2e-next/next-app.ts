/**
 * A Next.js example as a user deploys it: `next build` (a real production build), then `next start` on 127.0.0.1
 * and a free port, one process stopped by its pid. No network is needed: telemetry is off and the examples use
 * no remote fonts or images.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { freePort } from '../harness/redis.js';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const exampleDir = (name: string): string => join(ROOT, 'examples', name);

const baseEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(VITEST|NODE_OPTIONS$)/.test(key))),
  NODE_ENV: 'production',
  NEXT_TELEMETRY_DISABLED: '1',
  ...extra,
});

function nextBin(appDir: string): string {
  return createRequire(join(appDir, 'package.json')).resolve('next/dist/bin/next');
}

/** Runs `next build` in the example; rejects with the build's output when it fails. Returns the time it took. */
export function buildApp(appDir: string, timeoutMs = 200_000): Promise<{ ms: number; output: string }> {
  const started = Date.now();
  const child = spawn(process.execPath, [nextBin(appDir), 'build'], { cwd: appDir, env: baseEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`next build in ${appDir} did not finish within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ ms: Date.now() - started, output });
      else reject(new Error(`next build in ${appDir} exited with ${code}:\n${output}`));
    });
  });
}

export interface RunningApp {
  readonly url: string;
  readonly pid: number;
  output(): string;
  /** SIGTERM by pid, SIGKILL after 5 s. Safe to call twice. */
  stop(): Promise<void>;
}

/** `next start --hostname 127.0.0.1 --port <free>` with `env`; resolves once `GET /` answers 200. */
export async function startApp(appDir: string, env: Record<string, string>, readyTimeoutMs = 60_000): Promise<RunningApp> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [nextBin(appDir), 'start', '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: appDir,
    env: baseEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8000)));
  child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8000)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(force);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`next start exited with ${child.exitCode}:\n${output}`);
    const ok = await fetch(`${url}/`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { url, pid: child.pid!, output: () => output, stop };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await stop();
  throw new Error(`next start did not answer on ${url} within ${readyTimeoutMs} ms:\n${output}`);
}

/** Seconds since `startedMs`, rounded up: how far a store's clock can have moved during a burst. */
export const elapsedSeconds = (startedMs: number): number => Math.ceil((Date.now() - startedMs) / 1000);
