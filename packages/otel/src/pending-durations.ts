/**
 * Decision durations aggregated in process between two collections, then handed to the SDK's histogram when a
 * reader collects. The SDK's `record()` hashes the attribute set on every call (well over a microsecond), and
 * OpenTelemetry has no asynchronous histogram nor a way to record a value with a count. So a decision only adds
 * its duration to plain typed arrays here (a bucket search and four writes), and at collection every pending
 * duration is replayed with `record()`: the same number of calls as before, made off the decision's path.
 *
 * What the exporter receives is what per-decision records gave: per attribute set, the count, the bucket counts,
 * the minimum and the maximum are exact, and the sum is exact up to floating-point rounding. That holds because a
 * bucket's replayed values are its minimum, its maximum and, for the rest, the mean of the others, which lies
 * between the two, so in the same bucket. Under a View with other boundaries, counts, sum, minimum and maximum
 * stay exact, but a value replayed as a bucket's mean may land on the other side of a boundary the View adds.
 */
import type { Attributes, Histogram } from '@opentelemetry/api';
import { timers } from '@sluice/core/internal';

/**
 * One attribute set's pending durations, in seconds. Per bucket `b` of `bounds.length + 1` (the last one above
 * every bound): count at `b`, sum at `stride + b`, minimum at `2 * stride + b`, maximum at `3 * stride + b`.
 */
export interface PendingDurations {
  readonly attributes: Attributes;
  values: Float64Array;
  /** Durations added since the last replay: a set with none is skipped at collection. */
  pending: number;
}

/** Replayed records between two yields to the event loop: a few milliseconds of the SDK's work. */
const SLICE = 2048;

export function pendingDurations(attributes: Attributes, bounds: readonly number[]): PendingDurations {
  return { attributes, values: emptyValues(bounds.length + 1), pending: 0 };
}

function emptyValues(stride: number): Float64Array {
  const values = new Float64Array(4 * stride);
  values.fill(Infinity, 2 * stride, 3 * stride);
  values.fill(-Infinity, 3 * stride);
  return values;
}

/**
 * Adds one duration. Values the SDK's histogram would drop (negative, NaN) are dropped here too; a value equal to
 * a bound goes in that bound's bucket, as the SDK places it.
 */
export function addDuration(durations: PendingDurations, bounds: readonly number[], seconds: number): void {
  if (!(seconds >= 0)) return;
  const stride = bounds.length + 1;
  // Linear, not binary: decisions are mostly fast, so the search usually ends in the first few buckets.
  let bucket = 0;
  while (bucket < bounds.length && seconds > bounds[bucket]!) bucket++;
  const values = durations.values;
  values[bucket]!++;
  values[stride + bucket]! += seconds;
  if (seconds < values[2 * stride + bucket]!) values[2 * stride + bucket] = seconds;
  if (seconds > values[3 * stride + bucket]!) values[3 * stride + bucket] = seconds;
  durations.pending++;
}

/**
 * Records every pending duration of `all` on `histogram` and starts them afresh. The pending values are taken
 * before the first record, so durations added while a replay yields go to the next collection. The replay yields
 * to the event loop every few thousand records: a collection after millions of decisions does not stall the
 * process for seconds in one piece.
 */
export async function replayDurations(all: readonly PendingDurations[], histogram: Histogram, bounds: readonly number[]): Promise<void> {
  const stride = bounds.length + 1;
  const taken: { attributes: Attributes; values: Float64Array }[] = [];
  for (const durations of all) {
    if (durations.pending === 0) continue;
    taken.push({ attributes: durations.attributes, values: durations.values });
    durations.values = emptyValues(stride);
    durations.pending = 0;
  }
  let budget = SLICE;
  for (const { attributes, values } of taken) {
    for (let bucket = 0; bucket < stride; bucket++) {
      const count = values[bucket]!;
      if (count === 0) continue;
      const min = values[2 * stride + bucket]!;
      const max = values[3 * stride + bucket]!;
      histogram.record(min, attributes);
      if (count >= 2) histogram.record(max, attributes);
      if (count > 2) {
        // The mean of the others lies in [min, max]; rounding may push it a hair outside, so it is clamped (and an
        // infinite duration, whose mean is NaN, which the SDK would drop, is replayed as the minimum).
        const mean = (values[stride + bucket]! - min - max) / (count - 2);
        const rest = mean >= min ? (mean <= max ? mean : max) : min;
        for (let i = 2; i < count; i++) {
          histogram.record(rest, attributes);
          if (--budget === 0) {
            budget = SLICE;
            await yieldToEventLoop();
          }
        }
      }
    }
  }
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => void timers.setTimeout(resolve, 0));
