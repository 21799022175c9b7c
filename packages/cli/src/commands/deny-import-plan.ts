/** What `sluice config deny import` is asked (its flags), and the difference it takes from the list it read. */
import type { DenyEntry } from '@sluice/core/config';
import type { ConnectionFlags } from './config-connection.js';

export interface ImportFlags extends ConnectionFlags {
  identity?: boolean;
  for?: string;
  reason?: string;
  replace?: boolean;
  dryRun?: boolean;
}

/** What one import changes, counted. */
export interface Plan {
  deny: DenyEntry[];
  added: number;
  removed: number;
  unchanged: number;
  /** Stored entries whose end has passed, dropped as every writer drops them. */
  expired: number;
}

/** The next list: `current` with the file's difference applied. */
export function plan(current: readonly DenyEntry[], wanted: ReadonlyMap<string, DenyEntry>, replace: boolean, now: number): Plan {
  const deny: DenyEntry[] = [];
  const held = new Set<string>();
  let removed = 0;
  let expired = 0;
  for (const entry of current) {
    if (entry.until !== undefined && entry.until <= now) expired++;
    else if (replace && !wanted.has(entry.match)) removed++;
    else {
      deny.push(entry);
      held.add(entry.match);
    }
  }
  let added = 0;
  let unchanged = 0;
  for (const [match, entry] of wanted) {
    if (held.has(match)) {
      unchanged++;
      continue;
    }
    deny.push(entry);
    added++;
  }
  return { deny, added, removed, unchanged, expired };
}
