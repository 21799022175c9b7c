import {
  DENY_EXPIRE_MAX,
  DENY_LOG_LENGTH,
  changeText,
  entryText,
  newEpoch,
  stampChangeText,
  type DenyChangeResult,
  type DenyChangesRead,
  type DenyListChange,
  type DenyListSource,
  type DenyListVersion,
  type DenyPage,
  type Unsubscribe,
} from '@sluice/core/config';

interface List {
  readonly epoch: string;
  version: number;
  /** Entry texts by match, in insertion order. */
  readonly entries: Map<string, string>;
  /** The last DENY_LOG_LENGTH change texts, oldest first. */
  readonly log: string[];
  /** `until` of the entries that have one, by match: what `expireBefore` looks through. */
  readonly expiring: Map<string, number>;
  /** The entries' texts in order, for readPage, at the version they were taken. */
  snapshot?: { readonly version: number; readonly texts: readonly string[] };
}

/**
 * The memory config source's deny list structure (core's DenyListSource): each list a Map of entry texts, a log
 * of the last changes, and every subscriber told each change's text at once. A page's cursor is the number of
 * entries read so far, in the Map's order.
 */
export function memoryDenySource(): DenyListSource & { forget(name: string): void } {
  const lists = new Map<string, List>();
  const listeners = new Map<string, Set<(text: string) => void>>();
  const at = (list: List | undefined): DenyListVersion | undefined =>
    list === undefined ? undefined : { epoch: list.epoch, version: list.version };
  /** The next version: the change's text stamped, kept in the log and told to every subscriber. */
  const record = (name: string, list: List, text: string): DenyListVersion => {
    list.version++;
    const version = { epoch: list.epoch, version: list.version };
    const stamped = stampChangeText(text, version);
    list.log.push(stamped);
    if (list.log.length > DENY_LOG_LENGTH) list.log.splice(0, list.log.length - DENY_LOG_LENGTH);
    for (const listener of [...(listeners.get(name) ?? [])]) {
      try {
        listener(stamped);
      } catch {
        // A subscriber's exception is its own: the change is made, and the others are told.
      }
    }
    return version;
  };
  return {
    change(name: string, change: DenyListChange): DenyChangeResult {
      let list = lists.get(name);
      if (list === undefined) lists.set(name, (list = { epoch: newEpoch(), version: 0, entries: new Map(), log: [], expiring: new Map() }));
      if (change.clear === true) {
        list.entries.clear();
        list.expiring.clear();
      }
      let removed = 0;
      for (const match of change.remove ?? []) {
        list.expiring.delete(match);
        if (list.entries.delete(match)) removed++;
      }
      for (const entry of change.add ?? []) {
        list.entries.set(entry.match, entryText(entry));
        if (entry.until === undefined) list.expiring.delete(entry.match);
        else list.expiring.set(entry.match, entry.until);
      }
      let version = record(name, list, changeText(change));
      const before = change.expireBefore;
      if (before !== undefined) {
        const expired: string[] = [];
        for (const [match, until] of list.expiring) {
          if (until > before) continue;
          expired.push(match);
          if (expired.length === DENY_EXPIRE_MAX) break;
        }
        for (const match of expired) {
          list.expiring.delete(match);
          list.entries.delete(match);
        }
        if (expired.length > 0) version = record(name, list, changeText({ remove: expired }));
      }
      return { ...version, removed };
    },
    readChanges(name: string, since: DenyListVersion | undefined): DenyChangesRead {
      const list = lists.get(name);
      const version = at(list);
      if (list === undefined || since === undefined || since.epoch !== list.epoch || since.version > list.version)
        return { version, changes: undefined };
      const behind = list.version - since.version;
      if (behind > list.log.length) return { version, changes: undefined };
      return { version, changes: list.log.slice(list.log.length - behind) };
    },
    readPage(name: string, cursor: string, count: number): DenyPage {
      const list = lists.get(name);
      if (list === undefined) return { entries: [], cursor: '0', version: undefined };
      const from = Number(cursor) || 0;
      // The entries as an array, made once per version: a whole read of 100,000 takes 100 pages, not 100 copies.
      if (list.snapshot?.version !== list.version) list.snapshot = { version: list.version, texts: [...list.entries.values()] };
      const texts = list.snapshot.texts.slice(from, from + count);
      const next = from + texts.length;
      return { entries: texts, cursor: next >= list.entries.size ? '0' : String(next), version: at(list) };
    },
    subscribe(name: string, onChange: (text: string) => void): Unsubscribe {
      let set = listeners.get(name);
      if (set === undefined) listeners.set(name, (set = new Set()));
      const listener = (text: string) => onChange(text);
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(name) === set) listeners.delete(name);
      };
    },
    /** Drops a list as a store restarted empty would (for tests of that). */
    forget(name: string): void {
      lists.delete(name);
    },
  };
}
