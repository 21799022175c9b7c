/**
 * The suite's fake epoch: 2030-01-01T00:00:00Z. It is a whole number of every window the vectors use (1 ms up to
 * 1 day), so fixed windows, interval refills and sliding-counter windows all start exactly at FAKE_EPOCH.
 */
export const FAKE_EPOCH = Date.UTC(2030, 0, 1);

const PATTERN = /^(\d+):(\d{2})(?:\.(\d{3}))?$/;

/**
 * Milliseconds after FAKE_EPOCH for a clock reading such as `'0:15'`, `'1:24.001'` or `'210:00'` (minutes may exceed 59),
 * so vectors read like the worked examples they come from.
 */
export function clockOffset(text: string): number {
  const match = PATTERN.exec(text);
  if (match === null) throw new Error(`conformance vector: bad clock reading ${JSON.stringify(text)}, expected 'm:ss' or 'm:ss.mmm'`);
  return Number(match[1]) * 60_000 + Number(match[2]) * 1_000 + Number(match[3] ?? 0);
}

/** Resolves after `ms` of real time. Only store-clock expiry tests wait, and only a few hundred ms. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
