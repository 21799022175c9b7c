// Runs a script in a fresh Node process (e.g. with --expose-gc, so heap numbers are not blurred by the parent's
// garbage) and returns the JSON object it prints as its last stdout line. Its stderr passes through.
import { spawn } from 'node:child_process';

export function runNodeChild(file, { args = [], execArgv = ['--expose-gc'], timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...execArgv, file, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => (out += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${file} exited with ${signal ?? code}`));
      const last = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(last));
      } catch {
        reject(new Error(`${file} did not print a JSON line; it printed: ${out.slice(-500)}`));
      }
    });
  });
}

/** For the child side: print the result as the one JSON line the parent reads. */
export function reply(value) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
