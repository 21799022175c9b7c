/**
 * The Lua as files: the script and the Function library are src/lua assembled at build time, their names come
 * from the script's own SHA-1 (computed, never written down), Redis agrees with that digest, and the build is
 * as edge-safe as the source (the Upstash store ships it to edge runtimes).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { assemble, compactText, LUA_DIR, renameLocals, shortNames, STEPS } from '../build/lua.mjs';
import {
  CLIENT_CLOCK_EXPIRY_SLACK_MS,
  LEASE_SCRIPT,
  LEASE_SCRIPT_SHA1,
  LIMIT_FUNCTION,
  LIMIT_LIBRARY,
  LIMIT_SCRIPT,
  LIMIT_SCRIPT_SHA1,
} from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

const stepFiles = readdirSync(join(LUA_DIR, 'steps')).filter((f) => f.endsWith('.lua'));
const { names } = assemble();
/** Lines of a compacted text with its locals renamed by `map` (a text's entry in assemble().names). */
const renamed = (text: string, map: Record<string, string>) =>
  renameLocals(
    text
      .split('\n')
      .slice(0, -1)
      .map((line) => ({ text: line, file: 'text', line: 0 })),
    new Map(Object.entries(map)),
  )
    .map((l) => `${l.text}\n`)
    .join('');
/**
 * A .lua file as it ships: its leading `---` documentation lines dropped, then compacted (comment and blank lines
 * dropped, each other line squeezed) and its locals renamed as the script's (or `map`'s).
 */
const shipped = (file: string, map = names.script) =>
  renamed(compactText(readFileSync(join(LUA_DIR, file), 'utf8').replace(/^(?:---.*\n)+/, '')), map);

describe('the script is src/lua assembled', () => {
  test('LIMIT_SCRIPT_SHA1 is the SHA-1 of LIMIT_SCRIPT, and the Function is named after it', () => {
    expect(LIMIT_SCRIPT_SHA1).toBe(createHash('sha1').update(LIMIT_SCRIPT).digest('hex'));
    expect(LIMIT_FUNCTION).toBe(`sluice_limit_${LIMIT_SCRIPT_SHA1.slice(0, 12)}`);
    expect(LIMIT_LIBRARY.startsWith(`#!lua name=sluice_${LIMIT_SCRIPT_SHA1.slice(0, 12)}\n`)).toBe(true);
    expect(LIMIT_LIBRARY.endsWith(`redis.register_function('${LIMIT_FUNCTION}',${names.library.limit})\n`)).toBe(true);
  });

  test('what ships is the files, compacted and renamed: every step file, whole, with no include line, placeholder, doc header, comment, indentation or blank line left', () => {
    expect(stepFiles.length).toBe(STEPS.length);
    for (const text of [LIMIT_SCRIPT, LIMIT_LIBRARY]) {
      expect(text).not.toMatch(/--|@VERSION@|^\s/m);
      expect(text).not.toContain('\n\n');
      for (const file of stepFiles) expect(text, file).toContain(shipped(`steps/${file}`));
      expect(text).toContain(shipped('driver.lua'));
    }
    expect(assemble().script).toBe(LIMIT_SCRIPT);
  });

  test('each shipped line is its source line, squeezed, then renamed: the line maps name where it came from (luacheck reports by them)', () => {
    const { script, lease, readable, maps } = assemble();
    for (const [text, readableText, map, localNames] of [
      [script, readable.script, maps.script, names.script],
      [lease, readable.lease, maps.lease, names.lease],
    ] as const) {
      const lines = readableText.split('\n').slice(0, -1);
      expect(lines.length).toBe(map.length);
      lines.forEach((line, i) => {
        const origin = readFileSync(join(LUA_DIR, map[i]!.file), 'utf8').split('\n')[map[i]!.line - 1]!;
        // The step chain's `if code == ...` arms are generated at the `-- #include steps` line.
        if (!origin.includes('#include steps')) expect(`${line}\n`, `${map[i]!.file}:${map[i]!.line}`).toBe(compactText(origin));
      });
      expect(text).toBe(renamed(readableText, localNames));
    }
  });

  test('renaming gives locals short names and leaves fields, table keys, strings, globals and keywords alone', () => {
    const lines = [
      'local floor=math.floor',
      'local function step(state,window)',
      "local t={window=window,state='state'}",
      'for key,value in pairs(t)do state=t.window+floor(value)end',
      'return redis.call(KEYS[1],state,t:window())',
      'end',
      'local state_ttl=step({},1)',
    ].map((text, i) => ({ text, file: 'sample.lua', line: i + 1 }));
    const map = shortNames([lines]);
    expect([...map.keys()].sort()).toEqual(['floor', 'key', 'state', 'state_ttl', 'step', 'value', 'window']);
    // A short name is never a word the text already uses (`t` is taken), nor a keyword or a global.
    expect([...map.values()]).not.toContain('t');
    const [a, b, c] = [map.get('state'), map.get('window'), map.get('floor')];
    const out = renameLocals(lines, map).map((l) => l.text);
    expect(out[2]).toBe(`local t={window=${b},state='state'}`);
    expect(out[3]).toBe(`for ${map.get('key')},${map.get('value')} in pairs(t)do ${a}=t.window+${c}(${map.get('value')})end`);
    expect(out[4]).toBe(`return redis.call(KEYS[1],${a},t:window())`);
  });

  test('renaming changes no code: luac compiles every shipped text to the bytecode of its readable twin, debug information stripped', () => {
    const luac = ['luac5.1', 'luac'].find((bin) => spawnSync(bin, ['-v']).status === 0);
    if (luac === undefined) {
      throw new Error(
        'luac (Lua 5.1) is missing: install it with `sh scripts/install-luacheck.sh` (lua-check brings lua5.1) or `apt-get install -y lua5.1`',
      );
    }
    const assembled = assemble();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-luac-'));
    const bytecode = (text: string, name: string) => {
      writeFileSync(join(dir, `${name}.lua`), text);
      const run = spawnSync(luac, ['-s', '-o', join(dir, `${name}.out`), join(dir, `${name}.lua`)], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      return readFileSync(join(dir, `${name}.out`));
    };
    try {
      for (const name of ['script', 'library', 'lease', 'config', 'analytics', 'analyticsRead', 'denyChange', 'denyRead'] as const) {
        expect(assembled[name], name).not.toBe(assembled.readable[name]);
        expect(bytecode(assembled[name], `${name}-shipped`).equals(bytecode(assembled.readable[name], `${name}-readable`)), name).toBe(
          true,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('compaction drops the spaces Lua does not need and trailing comments, and keeps every token and line', () => {
    expect(compactText('  local a = 1 -- dropped\n\n  -- dropped\n')).toBe('local a=1\n');
    expect(compactText("if x ~= - -y and s .. 'a  b' == 1 .. t then\n")).toBe("if x~=- -y and s..'a  b'==1 ..t then\n");
    expect(compactText('return t [ i ] , f ( a , { 1 , 2 } ) >= 0.5\n')).toBe('return t[i],f(a,{1,2})>=0.5\n');
    expect(compactText('local s = "it\'s -- no comment" -- a comment\n')).toBe('local s="it\'s -- no comment"\n');
  });

  test('compaction refuses what it would change: a long string or comment, a continued string', () => {
    expect(() => compactText('local s = [[\n  text\n]]\n')).toThrow(/long string or comment/);
    expect(() => compactText('local s = [==[ a  b ]==]\n')).toThrow(/long string or comment/);
    expect(() => compactText("local s = 'a\\\nb'\n")).toThrow(/continued string/);
  });

  test('the script and the Function share one text: the library is the script wrapped, its body the driver', () => {
    const body = shipped('driver.lua');
    expect(LIMIT_SCRIPT.endsWith(`\n${body}`)).toBe(true);
    expect(LIMIT_LIBRARY).toContain(`if not ${names.library.floor} then ${names.library.bind}()end\n${body}end\n`);
  });

  test('the client-clock slack in the driver and the lease script is CLIENT_CLOCK_EXPIRY_SLACK_MS', () => {
    // The source names the constant in a comment on the line, which does not ship.
    expect(readFileSync(join(LUA_DIR, 'driver.lua'), 'utf8')).toContain(
      `slack = ${CLIENT_CLOCK_EXPIRY_SLACK_MS} -- CLIENT_CLOCK_EXPIRY_SLACK_MS`,
    );
    expect(readFileSync(join(LUA_DIR, 'lease.lua'), 'utf8')).toContain(`, ${CLIENT_CLOCK_EXPIRY_SLACK_MS} -- CLIENT_CLOCK_EXPIRY_SLACK_MS`);
    expect(LIMIT_SCRIPT).toContain(`${names.script.slack}=${CLIENT_CLOCK_EXPIRY_SLACK_MS}\n`);
    expect(LEASE_SCRIPT).toContain(`,${CLIENT_CLOCK_EXPIRY_SLACK_MS}`);
  });

  test('the lease script is lease.lua as it ships, with its own SHA-1', () => {
    expect(LEASE_SCRIPT).toBe(shipped('lease.lua', names.lease));
    expect(LEASE_SCRIPT_SHA1).toBe(createHash('sha1').update(LEASE_SCRIPT).digest('hex'));
    expect(assemble().lease).toBe(LEASE_SCRIPT);
  });

  test('a step file that STEPS does not dispatch fails the build instead of being left out', () => {
    const copy = mkdtempSync(join(tmpdir(), 'sluice-lua-'));
    try {
      cpSync(LUA_DIR, copy, { recursive: true });
      writeFileSync(join(copy, 'steps', 'new-algorithm.lua'), 'f = function() end\n');
      expect(() => assemble(copy)).toThrow(/steps holds .*new-algorithm\.lua.* but build\/lua\.mjs STEPS names/);
      rmSync(join(copy, 'steps', 'new-algorithm.lua'));
      rmSync(join(copy, 'steps', 'gcra.lua'));
      expect(() => assemble(copy)).toThrow(/list each step once/);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  test('an edit to a .lua file changes the digest and the Function name (no stale hard-coded SHA)', () => {
    const copy = mkdtempSync(join(tmpdir(), 'sluice-lua-'));
    try {
      cpSync(LUA_DIR, copy, { recursive: true });
      writeFileSync(join(copy, 'driver.lua'), `${readFileSync(join(copy, 'driver.lua'), 'utf8')}local edited = 1\n`);
      const edited = assemble(copy);
      expect(edited.sha1).toBe(createHash('sha1').update(edited.script).digest('hex'));
      expect(edited.sha1).not.toBe(LIMIT_SCRIPT_SHA1);
      expect(edited.library).toContain(`'sluice_limit_${edited.sha1.slice(0, 12)}'`);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe('on a real redis-server', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis({ host: server.host, port: server.port });
  });

  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  test('SCRIPT LOAD answers LIMIT_SCRIPT_SHA1, and FUNCTION LOAD registers LIMIT_FUNCTION', async () => {
    expect(await client.script('LOAD', LIMIT_SCRIPT)).toBe(LIMIT_SCRIPT_SHA1);
    expect(await client.function('LOAD', 'REPLACE', LIMIT_LIBRARY)).toBe(`sluice_${LIMIT_SCRIPT_SHA1.slice(0, 12)}`);
    // One fixed-window decision (limit 2, window 1 s) on the client's clock, through the Function.
    expect(await client.fcall(LIMIT_FUNCTION, 1, 'k:{a}:r', '@1000', '#fw 2 1000 0', '1')).toEqual([0, 1, 1, 2000, 1000]);
  });

  test('SCRIPT LOAD answers LEASE_SCRIPT_SHA1; one acquire on the client clock', async () => {
    expect(await client.script('LOAD', LEASE_SCRIPT)).toBe(LEASE_SCRIPT_SHA1);
    expect(await client.evalsha(LEASE_SCRIPT_SHA1, 1, 'k:{a}:lease', 'acquire', 'id-1', '2', '500', '@1000')).toEqual([1000, 1, 1, 1500]);
  });
});

describe('the build (what the Upstash store ships to edge runtimes)', () => {
  const built = (file: string) => readFileSync(fileURLToPath(new URL(`../dist/${file}`, import.meta.url)), 'utf8');

  test.each(['index.js', 'index.cjs'])(
    'dist/%s imports only @sluice/core (root, /store, /config and /internal) and touches no Node global',
    (file) => {
      const code = built(file);
      const specifiers = [...code.matchAll(/(?:from\s+|require\()\s*["']([^"']+)["']/g)].map((m) => m[1]);
      // /config: the deny list's change text and epoch (deny-script.ts), core's one copy of both.
      expect(new Set(specifiers)).toEqual(new Set(['@sluice/core', '@sluice/core/store', '@sluice/core/config', '@sluice/core/internal']));
      // The Lua is data (a string literal) and comments are not code.
      const codeOnly = code.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/^\s*\/\/.*$/gm, '');
      expect(codeOnly).not.toMatch(/\bBuffer\b|\bprocess\.|\b__dirname\b|\bnode:/);
    },
  );

  test('dist carries the digest the build computed', () => {
    expect(built('index.js')).toContain(JSON.stringify(LIMIT_SCRIPT_SHA1));
  });
});
