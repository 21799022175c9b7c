import type { ConfigSource, Unsubscribe } from '@sluice/core/config';
import { describeValue } from '@sluice/core/internal';
import { SluiceError } from '@sluice/core';
import { memoryDenySource } from './memory-deny-source.js';

/**
 * Runtime configuration (core's `watchConfig`) held in this process: documents in a Map, and every subscriber
 * told at once when one is written or removed. For a single process (an admin route flipping the kill switch
 * for the limiters beside it) and for tests; a fleet shares Redis, Upstash or SQLite instead.
 */
export interface MemoryConfigSource extends ConfigSource {
  read(name: string): string | undefined;
  write(name: string, text: string): void;
  remove(name: string): void;
  replace(name: string, expectedRevision: number, text: string): boolean;
  subscribe(name: string, onChange: () => void): Unsubscribe;
  /** The deny lists, each entry by itself (core's DenyListSource); `forget(name)` drops one as a store restarted empty would. */
  readonly deny: ReturnType<typeof memoryDenySource>;
}

/**
 * @example
 * const source = memoryConfigSource();
 * watchConfig(limiter, source);
 * await setLimiterMode(source, limiter.name, 'off'); // the limiter is off before the next decision is made
 */
export function memoryConfigSource(): MemoryConfigSource {
  const documents = new Map<string, string>();
  const listeners = new Map<string, Set<() => void>>();
  const notify = (name: string) => {
    for (const listener of [...(listeners.get(name) ?? [])]) {
      try {
        listener();
      } catch {
        // A subscriber's exception is its own: the write happened, and the other subscribers are told.
      }
    }
  };
  const write = (name: string, text: string) => {
    if (typeof text !== 'string')
      throw new SluiceError('INVALID_OPTION', `memoryConfigSource: write takes the document's text, got ${describeValue(text)}`);
    documents.set(name, text);
    notify(name);
  };
  return {
    deny: memoryDenySource(),
    read: (name) => documents.get(name),
    write,
    replace(name, expectedRevision, text) {
      if (storedRevision(documents.get(name)) !== expectedRevision) return false;
      write(name, text);
      return true;
    },
    remove(name) {
      documents.delete(name);
      notify(name);
    },
    subscribe(name, onChange) {
      let set = listeners.get(name);
      if (set === undefined) listeners.set(name, (set = new Set()));
      // Wrapped, so that two subscriptions of one function are two (each unsubscribes its own).
      const listener = () => onChange();
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(name) === set) listeners.delete(name);
      };
    },
  };
}

/** The revision of a stored document's text: 0 when none is stored, -1 when it has none (a replace never matches it). */
function storedRevision(text: string | undefined): number {
  if (text === undefined) return 0;
  try {
    const revision = (JSON.parse(text) as { revision?: unknown }).revision;
    return typeof revision === 'number' ? revision : -1;
  } catch {
    return -1;
  }
}
