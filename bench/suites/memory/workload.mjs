// The workload every contestant of the memory suite sees: the same 10,000 identity strings, drawn in the same
// pseudo-random order, against a token bucket of capacity 100 refilled at 50 per second (or its closest
// equivalent in each peer; see bench/README.md).
import { prng } from '../../lib/stats.mjs';

export const IDENTITIES = 10_000;
export const CAPACITY = 100;
export const REFILL_PER_SECOND = 50;
/** Peers that count in fixed windows get the window in which the bucket refills completely: 100 per 2 s. */
export const WINDOW_MS = (CAPACITY / REFILL_PER_SECOND) * 1000;

/** Identity strings made once, as a server has them in hand (from a header or the socket) before it asks. */
export const ids = Array.from({ length: IDENTITIES }, (_, i) => `user:${i}`);

/** 2^16 draws, uniform over the first `identities` identities; contestants walk it cyclically with `order[cursor++ & MASK]`. */
export const MASK = 0xffff;
export function makeOrder(identities = IDENTITIES) {
  const random = prng(0x5eed);
  return Uint16Array.from({ length: MASK + 1 }, () => Math.floor(random() * identities));
}
export const order = makeOrder();

/** The suite's main workload: 10,000 identities in the fixed random order above. */
export const SMALL = { ids, order, mask: MASK };

/**
 * The large workload: 2^20 (1,048,576) identities, walked in one fixed random permutation, so every identity is
 * used exactly once per 2^20 decisions (each decision finds its identity as cold as a uniform draw over a million
 * would) and warmup rounds covering one pass leave every contestant holding all of them before timing starts.
 * Built on first use: it is 80 MB of strings.
 */
export const LARGE_IDENTITIES = 2 ** 20;
let large;
export function largeWorkload() {
  if (large !== undefined) return large;
  const many = Array.from({ length: LARGE_IDENTITIES }, (_, i) => `user:${i}`);
  const permutation = Uint32Array.from({ length: LARGE_IDENTITIES }, (_, i) => i);
  const random = prng(0x1a29e);
  for (let i = permutation.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [permutation[i], permutation[j]] = [permutation[j], permutation[i]];
  }
  large = { ids: many, order: permutation, mask: LARGE_IDENTITIES - 1 };
  return large;
}

/**
 * Runs `n` rate-limiter-flexible consume() calls over the workload's identity order and tallies them. A
 * RateLimiterRes rejection means "limited"; anything else is a real failure and is rethrown. Shared by every suite
 * that measures an RLF limiter, so they all drive it the same way.
 */
export async function consumeRlf(limiter, RateLimiterRes, order, tally, n, workload = SMALL) {
  const { ids: names, mask } = workload;
  let allowed = 0;
  let c = tally.cursor;
  for (let i = 0; i < n; i++) {
    try {
      await limiter.consume(names[order[c++ & mask]]);
      allowed++;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
    }
  }
  tally.cursor = c;
  tally.allowed += allowed;
  tally.total += n;
}
