/**
 * A deny list change as text: what a store keeps in its log and announces (deny/source.ts), and what watchers read.
 *   { "epoch": "m3x1k9a2", "version": 12, "clear": true, "remove": ["user:7"], "add": [{ "match": "203.0.113.0/24", "until": 1767229200000 }] }
 * `clear`, `remove` and `add` are optional. A store makes it from the change the writer sent (`changeText`) and
 * the version it reached (`stampChangeText`), without parsing it, so a Lua script can do it by concatenation.
 */
import type { DenyEntry } from './entries.js';
import type { DenyListChange, DenyListVersion } from './source.js';

/** A change read back from its text: entries as found (each is checked by the reader), where it leads. */
export interface DenyChangeRecord extends DenyListVersion {
  readonly clear: boolean;
  readonly remove: readonly unknown[];
  readonly add: readonly unknown[];
}

/** The change without its version, as a writer sends it: a JSON object text starting with `{`. */
export function changeText(change: DenyListChange): string {
  return JSON.stringify({
    ...(change.clear === true ? { clear: true } : {}),
    ...(change.remove === undefined || change.remove.length === 0 ? {} : { remove: change.remove }),
    ...(change.add === undefined || change.add.length === 0 ? {} : { add: change.add }),
  });
}

/** The change's text stamped with the version it made: `{"epoch":…,"version":…,` followed by the rest of `text`. */
export function stampChangeText(text: string, at: DenyListVersion): string {
  const rest = text.slice(1);
  return `{"epoch":${JSON.stringify(at.epoch)},"version":${at.version}${rest === '}' ? '' : ','}${rest}`;
}

/** An entry's text as a store keeps it. */
export function entryText(entry: DenyEntry): string {
  return JSON.stringify(entry);
}

/** A new epoch: a name for one life of a store's structure, unlikely to repeat. */
export function newEpoch(): string {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
}

/** Reads a change's text; undefined when it is not one (written by something else, or cut short). */
export function readChangeText(text: unknown): DenyChangeRecord | undefined {
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { epoch, version, clear, remove, add } = value as Record<string, unknown>;
  if (typeof epoch !== 'string' || epoch.length === 0 || !Number.isSafeInteger(version) || (version as number) < 1) return undefined;
  if (clear !== undefined && typeof clear !== 'boolean') return undefined;
  if (remove !== undefined && !Array.isArray(remove)) return undefined;
  if (add !== undefined && !Array.isArray(add)) return undefined;
  return { epoch, version: version as number, clear: clear === true, remove: (remove as unknown[]) ?? [], add: (add as unknown[]) ?? [] };
}
