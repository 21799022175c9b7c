// examples/bun-memory: its start command runs a Bun.serve server with the memory store in Bun itself, sends it seven
// requests, prints the transcript and exits by itself. Runs `bun start.mjs`, the command `pnpm start` ends with (the
// packages it imports are built before this suite runs, which is the other half of `pnpm start`), with the Bun that
// `pnpm install` put in the example's own node_modules.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/bun-memory');
const bun = join(exampleDir, 'node_modules/bun/bin/bun.exe');
const TIMEOUT_MS = 20_000;

it('pnpm start: Bun.serve with the memory store allows a burst of 5, then answers 429 with its headers, and exits 0', () => {
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& bun start\.mjs$/);
  if (!existsSync(bun)) {
    throw new Error(
      `${bun} is missing: run \`pnpm install\` at the repository root (the example depends on the npm package bun, whose postinstall is allowed in pnpm.onlyBuiltDependencies)`,
    );
  }

  const result = spawnSync(bun, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: TIMEOUT_MS });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);

  expect(out).toMatch(/^Bun \d+\.\d+\.\d+: Bun\.serve on http:\/\/127\.0\.0\.1:\d+, @sluice\/memory/m);
  const rows = [...out.matchAll(/^ {2}([1-7]) {2}(\d{3})\s+"api";r=(\d+);t=(\d+)$/gm)].map((m) => ({
    status: Number(m[2]),
    remaining: Number(m[3]),
  }));
  expect(rows).toEqual([
    { status: 200, remaining: 4 },
    { status: 200, remaining: 3 },
    { status: 200, remaining: 2 },
    { status: 200, remaining: 1 },
    { status: 200, remaining: 0 },
    { status: 429, remaining: 0 },
    { status: 429, remaining: 0 },
  ]);
  // The first 429 in full, as @sluice/http writes it.
  expect(out).toMatch(
    /^HTTP 429 Too Many Requests\n {2}content-type: application\/problem\+json\n {2}ratelimit-policy: "api";q=5;w=50\n {2}ratelimit: "api";r=0;t=(\d+)\n {2}retry-after: (\d+)\n {2}\{"type":"https:\/\/iana\.org\/assignments\/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,/m,
  );
  const [, t, retryAfter] = /ratelimit: "api";r=0;t=(\d+)\n {2}retry-after: (\d+)/.exec(out)!;
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(10);
  expect(Number(t)).toBeLessThanOrEqual(Number(retryAfter));
  expect(out).toContain('5 of 7 allowed for user:demo-key; the server stops and the process exits.');
});
