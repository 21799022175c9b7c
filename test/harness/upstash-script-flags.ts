/**
 * Upstash accepts script flags that Redis 7 refuses. `allow-key-locking` (Upstash's key-based locking: the
 * script locks only the keys in KEYS instead of the whole database) is what @upstash/ratelimit puts in every
 * shebang, `#!lua flags=allow-key-locking`, and plain Redis answers "Unexpected flag in script shebang".
 *
 * The fixture rewrites the shebang before Redis sees it, and keeps the client's view intact: SHA1 digests are
 * those of the text the client sent (what SCRIPT LOAD returns and EVALSHA names on Upstash), mapped to the
 * digest of the rewritten text that Redis actually caches.
 */
import { createHash } from 'node:crypto';

/** Flags Upstash understands and Redis 7 does not. Other unknown flags reach Redis and are refused, as upstream. */
export const UPSTASH_ONLY_FLAGS: ReadonlySet<string> = new Set(['allow-key-locking']);

export function sha1Hex(text: string | Buffer): string {
  return createHash('sha1').update(text).digest('hex');
}

/** The script as Redis must receive it: same body, line for line, with Upstash-only flags dropped from the shebang. */
export function translateScript(script: string): string {
  if (!script.startsWith('#!')) return script;
  const newline = script.indexOf('\n');
  const shebang = newline < 0 ? script : script.slice(0, newline);
  const rest = newline < 0 ? '' : script.slice(newline);
  const [engine, ...params] = shebang.trim().split(/\s+/);
  let changed = false;
  const kept = params.map((param) => {
    if (!param.startsWith('flags=')) return param;
    const flags = param
      .slice('flags='.length)
      .split(',')
      .filter((flag) => flag !== '');
    const redisFlags = flags.filter((flag) => !UPSTASH_ONLY_FLAGS.has(flag));
    if (redisFlags.length === flags.length) return param;
    changed = true;
    return redisFlags.length === 0 ? '' : `flags=${redisFlags.join(',')}`;
  });
  if (!changed) return script;
  return [engine, ...kept.filter((param) => param !== '')].join(' ') + rest;
}

/**
 * Digest bookkeeping shared by EVAL, EVALSHA, SCRIPT LOAD and SCRIPT EXISTS: client digest -> Redis digest, for
 * the scripts whose text the fixture rewrote. Scripts it did not rewrite have the same digest on both sides.
 */
export class ScriptDigests {
  private readonly toRedis = new Map<string, string>();

  /** Rewrites a script body and remembers its digests; returns the text for Redis and the client's digest. */
  admit(script: string): { redisScript: string; clientSha: string } {
    const redisScript = translateScript(script);
    const clientSha = sha1Hex(script);
    if (redisScript !== script) this.toRedis.set(clientSha, sha1Hex(redisScript));
    return { redisScript, clientSha };
  }

  /** The digest Redis knows for a digest the client sent (case-insensitive, as Redis is). */
  redisSha(clientSha: string): string {
    const lower = clientSha.toLowerCase();
    return this.toRedis.get(lower) ?? clientSha;
  }

  clear(): void {
    this.toRedis.clear();
  }
}
