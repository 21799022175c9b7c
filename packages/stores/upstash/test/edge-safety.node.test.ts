/**
 * Edge safety of what a user's bundler sees: the built entry points import nothing but @sluice/core and
 * @sluice/redis-script (whose own tests check its build the same way) and use no Node global. (ESLint bans the
 * same in src; this checks the output.)
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UPSTASH_LIMIT_SCRIPT } from '../src/index.js';
import { upstashLimitScriptSha1, withUpstashFlags } from '../src/upstash-script.js';

const built = (file: string) => readFileSync(fileURLToPath(new URL(`../dist/${file}`, import.meta.url)), 'utf8');

describe.each(['index.js', 'index.cjs'])('dist/%s', (file) => {
  const code = built(file);

  it('imports only @sluice/core (and its /analytics subpath) and @sluice/redis-script (the shared option checks are bundled)', () => {
    const specifiers = [...code.matchAll(/(?:from\s+|require\()\s*["']([^"']+)["']/g)].map((m) => m[1]);
    expect(specifiers.length).toBeGreaterThan(0);
    expect(new Set(specifiers)).toEqual(new Set(['@sluice/core', '@sluice/core/analytics', '@sluice/redis-script']));
  });

  it('touches no Node global (Buffer, process, __dirname)', () => {
    // The Lua source is data, and comments are not code (tsup writes one mentioning "node:").
    const codeOnly = code.replace(/`[^`]*`/g, '``').replace(/^\s*\/\/.*$/gm, '');
    expect(codeOnly).not.toMatch(/\bBuffer\b|\bprocess\.|\b__dirname\b|\bnode:/);
  });
});

describe('the Upstash script', () => {
  it('carries allow-key-locking in its shebang and is otherwise the Redis store script', () => {
    expect(UPSTASH_LIMIT_SCRIPT.split('\n')[0]).toBe('#!lua flags=allow-key-locking');
  });

  it('merges the flag into an existing shebang without duplicating it', () => {
    expect(withUpstashFlags('#!lua\nreturn 1')).toBe('#!lua flags=allow-key-locking\nreturn 1');
    expect(withUpstashFlags('#!lua flags=no-writes\nreturn 1')).toBe('#!lua flags=no-writes,allow-key-locking\nreturn 1');
    expect(withUpstashFlags('#!lua flags=allow-key-locking\nreturn 1')).toBe('#!lua flags=allow-key-locking\nreturn 1');
  });

  it('has the digest Redis computes (WebCrypto SHA-1 equals node:crypto SHA-1)', async () => {
    expect((await upstashLimitScriptSha1()).sha1).toBe(createHash('sha1').update(UPSTASH_LIMIT_SCRIPT).digest('hex'));
  });
});
