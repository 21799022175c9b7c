/**
 * Event-loop stalls for the stall tests of every store, and the checks they share. A stall is real: a synchronous
 * busy loop, so no timer fires and no socket is read while it runs (what a long synchronous handler, a GC pause or
 * JIT at start does to the rest of the process). Edge-safe: only Date.now, setTimeout and promises.
 */
import { expect } from 'vitest';
import type { Decision, Limiter } from '@sluice/core';

const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };

/** A message port pair, as every runtime the tests run in has it (typed here: the edge-safe packages compile without DOM or Node typings). */
export interface MessagePortLike<T> {
  onmessage: ((event: { data: T }) => void) | null;
  postMessage(message: T): void;
  close(): void;
}
export function messageChannel<T>(): { port1: MessagePortLike<T>; port2: MessagePortLike<T> } {
  const runtime = globalThis as unknown as { MessageChannel: new () => { port1: MessagePortLike<T>; port2: MessagePortLike<T> } };
  return new runtime.MessageChannel();
}

/** setTimeout, typed for the edge-safe packages' tests. */
export function later(callback: () => void, ms: number): void {
  timers.setTimeout(callback, ms);
}

/** Busy for `ms` by the wall clock: nothing else in the process runs meanwhile. */
export function stallEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: no timer, no socket read, nothing else runs
  }
}

/**
 * `count` busy slices of `ms` each, one per turn of the event loop (a timer turn between two slices lets I/O and
 * timers run): a process starved of CPU, or a server busy with many short synchronous requests.
 */
export function stallInSlices(count: number, ms: number): Promise<void> {
  return new Promise((resolve) => {
    let left = count;
    const slice = (): void => {
      stallEventLoop(ms);
      if (--left === 0) resolve();
      else timers.setTimeout(slice, 0);
    };
    timers.setTimeout(slice, 0);
  });
}

/** Runs queued microtasks (a batcher sealing its call and writing it out) without giving the loop a turn to read I/O. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

/**
 * Resolves in the I/O phase of a turn of the event loop, where a request handler starts (a message read, as a socket
 * read is): a stall begun from there ends before the loop's next timers, as a stalled request handler's does.
 */
export function ioTurn(): Promise<void> {
  return new Promise((resolve) => {
    const channel = messageChannel<number>();
    channel.port2.onmessage = () => {
      channel.port1.close();
      channel.port2.close();
      resolve();
    };
    channel.port1.postMessage(0);
  });
}

/** Resolves after `ms` by the wall clock. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(resolve, ms));
}

/** The error codes of the degraded decisions among `decisions` (an empty list when the store answered them all). */
export function degradedCodes(decisions: readonly Decision[]): Array<string | undefined> {
  return decisions.filter((d) => d.degraded).map((d) => (d.error as { code?: string } | undefined)?.code);
}

/**
 * What a stall must not change: every decision answered by the store (none degraded), exactly `allowed` of them
 * allowed, the breaker closed, and a different identity right after limited for real (`limit` of `limit + 3`).
 */
export async function expectStoreAnswered(
  limiter: Limiter,
  decisions: readonly Decision[],
  allowed: number,
  next: { identity: string; limit: number },
): Promise<void> {
  expect(degradedCodes(decisions)).toEqual([]);
  expect(decisions.filter((d) => d.allowed)).toHaveLength(allowed);
  expect(limiter.circuit).toBe('closed');
  const after = await Promise.all(Array.from({ length: next.limit + 3 }, () => limiter.limit(next.identity)));
  expect(degradedCodes(after)).toEqual([]);
  expect(after.filter((d) => d.allowed)).toHaveLength(next.limit);
}

/**
 * Runs `work` and measures it by the caller's wall clock (never the limiter's own time), in ms.
 */
export async function wallClock<T>(work: () => Promise<T>): Promise<{ value: T; elapsedMs: number }> {
  const start = Date.now();
  const value = await work();
  return { value, elapsedMs: Date.now() - start };
}
