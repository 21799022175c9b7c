import type { ConfigSource } from '../../src/config/index.js';

/**
 * The smallest honest config source, for core's own tests (core cannot depend on @sluice/memory, which has the
 * real in-process one): documents in a Map, subscribers told after each write. `failing` makes every read throw,
 * `hanging` makes reads never answer, and `reads` and `writes` count them.
 */
export class MapConfigSource implements ConfigSource {
  readonly documents = new Map<string, string>();
  readonly listeners = new Map<string, Set<() => void>>();
  reads = 0;
  writes = 0;
  failing: Error | undefined = undefined;
  hanging = false;
  /** Set to false to leave out subscribe (a source that cannot push, like SQLite or Upstash). */
  constructor(push = true) {
    if (!push) this.subscribe = undefined;
  }

  read(name: string): Promise<string | undefined> {
    this.reads++;
    if (this.hanging) return new Promise(() => {});
    if (this.failing !== undefined) return Promise.reject(this.failing);
    return Promise.resolve(this.documents.get(name));
  }

  write(name: string, text: string): void {
    this.writes++;
    this.documents.set(name, text);
    this.notify(name);
  }

  remove(name: string): void {
    this.documents.delete(name);
    this.notify(name);
  }

  subscribe?: ConfigSource['subscribe'] = (name, onChange) => {
    let set = this.listeners.get(name);
    if (set === undefined) this.listeners.set(name, (set = new Set()));
    set.add(onChange);
    return () => void set.delete(onChange);
  };

  private notify(name: string): void {
    for (const listener of this.listeners.get(name) ?? []) listener();
  }
}
