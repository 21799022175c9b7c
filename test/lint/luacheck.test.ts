// `pnpm lint` runs luacheck on the Redis script as it ships (scripts/luacheck.mjs), and `pnpm test` (through
// scripts/test-setup.sh) and `pnpm test:fast` install luacheck first when it is missing (scripts/install-luacheck.sh).
// These prove both can fail, and fail in a way that says what to do.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const runner = join(root, 'scripts/luacheck.mjs');
const installer = join(root, 'scripts/install-luacheck.sh');
const luaDir = join(root, 'packages/stores/redis-script/src/lua');
const scratch: string[] = [];

function copyOfLua(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-luacheck-'));
  scratch.push(dir);
  cpSync(luaDir, dir, { recursive: true });
  return dir;
}

function lint(dir?: string, env: NodeJS.ProcessEnv = process.env) {
  const result = spawnSync(process.execPath, [runner, ...(dir === undefined ? [] : [dir])], { cwd: root, encoding: 'utf8', env });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('luacheck in pnpm lint', () => {
  it('is part of the root lint script', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts.lint).toContain('node scripts/luacheck.mjs');
  });

  it("passes on the repository's Lua", () => {
    const { status, output } = lint();
    // Every .lua file of the script's sources (its top level and steps/) is linted: the runner counts them.
    const sources = [luaDir, join(luaDir, 'steps')].flatMap((dir) => readdirSync(dir).filter((file) => file.endsWith('.lua')));
    expect(output).toMatch(new RegExp(`luacheck: ${sources.length} files clean`));
    expect(status).toBe(0);
  });

  it('fails on an undefined variable in a step, reporting it at its line in the step file', () => {
    const dir = copyOfLua();
    const file = join(dir, 'steps/fixed-window.lua');
    const lines = readFileSync(file, 'utf8').split('\n');
    const at = lines.findIndex((line) => line.includes('local start = floor('));
    lines[at] = lines[at]!.replace('floor(', 'flor(');
    writeFileSync(file, lines.join('\n'));
    const { status, output } = lint(dir);
    expect(status).toBe(1);
    expect(output).toContain(`steps/fixed-window.lua:${at + 1}:`);
    expect(output).toMatch(/\(W113\) accessing undefined variable 'flor'/);
  });

  it('lints the lease script too, reporting at its line in lease.lua', () => {
    const dir = copyOfLua();
    const file = join(dir, 'lease.lua');
    const lines = readFileSync(file, 'utf8').split('\n');
    const at = lines.findIndex((line) => line.includes("redis.call('ZCARD', key)"));
    lines[at] = lines[at]!.replace('key)', 'kee)');
    writeFileSync(file, lines.join('\n'));
    const { status, output } = lint(dir);
    expect(status).toBe(1);
    expect(output).toContain(`lease.lua:${at + 1}:`);
    expect(output).toMatch(/\(W113\) accessing undefined variable 'kee'/);
  });

  it('fails on a .lua file that no #include reaches (it would ship unlinted, or not at all)', () => {
    const dir = copyOfLua();
    writeFileSync(join(dir, 'orphan.lua'), 'return 1\n');
    const { status, output } = lint(dir);
    expect(status).toBe(1);
    expect(output).toMatch(/orphan\.lua: not part of the script or the library/);
  });

  it('fails loudly, with the install command, when luacheck is missing', () => {
    const empty = mkdtempSync(join(tmpdir(), 'sluice-no-luacheck-'));
    scratch.push(empty);
    const { status, output } = lint(undefined, { ...process.env, PATH: empty });
    expect(status).toBe(1);
    expect(output).toMatch(/luacheck binary is missing[\s\S]*sh scripts\/install-luacheck\.sh[\s\S]*apt-get install -y lua-check/);
  });
});

describe('the test commands install luacheck', () => {
  it('pnpm test runs scripts/test-setup.sh first, which runs scripts/install-luacheck.sh; pnpm test:fast runs it first', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts.test).toMatch(/^sh scripts\/test-setup\.sh && /);
    expect(readFileSync(join(root, 'scripts/test-setup.sh'), 'utf8')).toMatch(/^sh "\$here\/install-luacheck\.sh"$/m);
    expect(manifest.scripts['test:fast']).toMatch(/^sh scripts\/install-luacheck\.sh && /);
  });

  it('does nothing, quickly and silently, when luacheck is on the PATH', () => {
    const started = Date.now();
    const result = spawnSync('sh', [installer], { encoding: 'utf8' });
    expect([result.status, result.stdout, result.stderr]).toEqual([0, '', '']);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('fails loudly where it has no package manager to install with', () => {
    const empty = mkdtempSync(join(tmpdir(), 'sluice-no-tools-'));
    scratch.push(empty);
    const result = spawnSync('/bin/sh', [installer], { encoding: 'utf8', env: { PATH: empty } });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/no apt-get, brew or luarocks here; install luacheck yourself/);
  });
});
