/**
 * Edge safety of what a user's bundler sees: the built entry points import nothing but @sluice/core and
 * @sluice/redis-script (whose own tests check its build the same way) and use no Node global. (ESLint bans the
 * same in src; this checks the output.)
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LEASE_SCRIPT, LIMIT_SCRIPT } from '@sluice/redis-script';
import { UPSTASH_LEASE_SCRIPT, UPSTASH_LIMIT_SCRIPT } from '../src/index.js';
import { upstashLimitScriptSha1 } from '../src/upstash-script.js';

const built = (file: string) => readFileSync(fileURLToPath(new URL(`../dist/${file}`, import.meta.url)), 'utf8');

describe.each(['index.js', 'index.cjs'])('dist/%s', (file) => {
  const code = built(file);

  it('imports only @sluice/core (its /analytics subpath, and /internal for the option checks every sluice package shares, one copy in a bundle) and @sluice/redis-script', () => {
    const specifiers = [...code.matchAll(/(?:from\s+|require\()\s*["']([^"']+)["']/g)].map((m) => m[1]);
    expect(specifiers.length).toBeGreaterThan(0);
    expect(new Set(specifiers)).toEqual(
      new Set(['@sluice/core', '@sluice/core/analytics', '@sluice/core/internal', '@sluice/redis-script']),
    );
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

  it('prepends the shebang to both Redis store scripts, which have none of their own to merge it into', () => {
    expect(LIMIT_SCRIPT.startsWith('#!')).toBe(false);
    expect(LEASE_SCRIPT.startsWith('#!')).toBe(false);
    expect(UPSTASH_LIMIT_SCRIPT).toBe(`#!lua flags=allow-key-locking\n${LIMIT_SCRIPT}`);
    expect(UPSTASH_LEASE_SCRIPT).toBe(`#!lua flags=allow-key-locking\n${LEASE_SCRIPT}`);
  });

  it('has the digest Redis computes (WebCrypto SHA-1 equals node:crypto SHA-1)', async () => {
    expect((await upstashLimitScriptSha1()).sha1).toBe(createHash('sha1').update(UPSTASH_LIMIT_SCRIPT).digest('hex'));
  });
});
