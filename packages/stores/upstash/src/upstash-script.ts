/**
 * The Redis store's Lua executor (one script per decision, compound rules included) and its lease script, shipped with the shebang
 * flag Upstash needs: `allow-key-locking` makes Upstash lock only the keys in KEYS instead of the whole database,
 * so decisions for different identities run in parallel. Neither script touches a key outside KEYS, which is that
 * flag's rule. Their digests is computed once with WebCrypto (present in Node 20+, Deno, Bun and every edge runtime).
 */
import { LEASE_SCRIPT, LIMIT_SCRIPT } from '@sluice/redis-script';

/**
 * The shebang both scripts start with. Neither Redis store script has a shebang of its own (a test holds that), so
 * the flag is prepended, never merged into an existing line.
 */
const UPSTASH_SHEBANG = '#!lua flags=allow-key-locking\n';

const flagged = (script: string): string => UPSTASH_SHEBANG + script;

// Pure: a bundle that never sends a script (or only one of them) drops the call and the text.
export const UPSTASH_LIMIT_SCRIPT: string = /* @__PURE__ */ flagged(LIMIT_SCRIPT);

/** The concurrency-lease script (`store.lease()`), flagged the same way. */
export const UPSTASH_LEASE_SCRIPT: string = /* @__PURE__ */ flagged(LEASE_SCRIPT);

/** The two web globals used here, typed by hand: the package compiles without DOM or Node typings. */
const web = globalThis as unknown as {
  crypto?: { subtle?: { digest(algorithm: 'SHA-1', data: Uint8Array): Promise<ArrayBuffer> } };
  TextEncoder: new () => { encode(text: string): Uint8Array };
};

/** A script's digest: computing (a promise), then known. */
const digests = new Map<string, Promise<{ sha1: string | undefined }> | { sha1: string | undefined }>();

/**
 * SHA-1 of a script (UPSTASH_LIMIT_SCRIPT, UPSTASH_LEASE_SCRIPT) in hex, for EVALSHA; undefined where WebCrypto
 * is missing, in which case the store sends EVAL every time (still one request per call, only a larger one).
 * WebCrypto only digests asynchronously: the first call waits for it, later ones get the value without a promise.
 */
export function upstashScriptSha1(script: string): { sha1: string | undefined } | Promise<{ sha1: string | undefined }> {
  let digest = digests.get(script);
  if (digest === undefined) {
    digest = sha1Hex(script).then((sha1) => {
      const known = { sha1 };
      digests.set(script, known);
      return known;
    });
    digests.set(script, digest);
  }
  return digest;
}

/** SHA-1 of UPSTASH_LIMIT_SCRIPT (see upstashScriptSha1). */
export function upstashLimitScriptSha1(): { sha1: string | undefined } | Promise<{ sha1: string | undefined }> {
  return upstashScriptSha1(UPSTASH_LIMIT_SCRIPT);
}

async function sha1Hex(text: string): Promise<string | undefined> {
  const subtle = web.crypto?.subtle;
  if (subtle === undefined) return undefined;
  try {
    const bytes = new Uint8Array(await subtle.digest('SHA-1', new web.TextEncoder().encode(text)));
    let hex = '';
    for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
    return hex;
  } catch {
    return undefined; // a runtime whose WebCrypto refuses SHA-1: fall back to EVAL rather than fail decisions
  }
}
