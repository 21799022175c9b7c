// Starts upstash-fixture-main.ts (a redis-server plus the Upstash REST fixture) as a child process, for plain
// Node code outside the test runner: examples/upstash-fetch and `pnpm bench upstash`. The fixture is TypeScript,
// so the caller passes the URL of its TypeScript loader (`import.meta.resolve('tsx')` from a package that
// depends on tsx). The child stops its redis-server and itself when `stop()` closes its stdin, or when this
// process exits and the pipe closes.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./upstash-fixture-main.ts', import.meta.url));

/**
 * @param {{ loader: string, timeoutMs?: number }} options  loader: URL of the tsx loader
 * @returns {Promise<{ url: string, token: string, redisPort: number, pid: number, stats(): Promise<object>, reset(): Promise<void>, stop(): Promise<void> }>}
 */
export function startFixtureProcess({ loader, timeoutMs = 20_000 }) {
  const child = spawn(process.execPath, ['--import', loader, MAIN], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`the Upstash fixture did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the Upstash fixture exited with ${code} before it was ready`));
    });
    child.stdout.on('data', (chunk) => {
      output += chunk.toString();
      const newline = output.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const { url, token, redisPort } = JSON.parse(output.slice(0, newline));
      const control = (action, method = 'GET') =>
        fetch(`${url}/__fixture/${action}`, { method, headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
      resolve({
        url,
        token,
        redisPort,
        pid: child.pid,
        stats: () => control('stats'),
        reset: async () => {
          await control('reset', 'POST');
        },
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(force);
              done();
            });
            child.stdin.end();
          }),
      });
    });
  });
}
