/**
 * The watcher's half for a deny list kept in its store's own structure (deny/source.ts): follows it change by
 * change, so that a change to one entry of a list of 100,000 reaches the limiter as that entry
 * (a live deny list's `change`, deny/lineage.ts), never as a re-read and re-check of the whole list.
 *
 * - A pushed change that follows the version held is applied as it arrives; any other (a gap, another epoch, a
 *   reconnect's empty notice) asks for a read of the changes since the version held.
 * - A read answers the changes one by one while the store's log reaches back, else the list whole, a page at a
 *   time; a whole read is applied as the difference from the list held, so what a reader built from the list (the
 *   HTTP layer's matcher) follows at the cost of that difference.
 * - Work is cut into slices of about SLICE_MS with a timer turn between them, so that no change, however large, holds
 *   the event loop for long: requests go on being served while a feed of 100,000 entries arrives.
 * - An entry that is not valid (written by something else) is left out with one warning per change or read.
 * - A structure that is gone (the store restarted empty) leaves the list as it was, with one warning, as a lost
 *   document does (config/watch-config.ts).
 */
import { readChangeText } from '../deny/change.js';
import { checkDenyList, markCheckedDenyList, type DenyEntry } from '../deny/entries.js';
import type { DenyListChange, DenyListSource, DenyListVersion } from '../deny/source.js';
import type { SluiceError } from '../shared/errors.js';
import { timers } from '../shared/timers.js';

/** Longest stretch of work before a timer turn lets requests in. */
export const SLICE_MS = 4;
/** Entries asked for per page of a whole read. */
const PAGE = 1000;

/** What the follower needs from the watcher. */
export interface DenyFollowerHost {
  /** The limiter's name (the list's name in the store). */
  readonly name: string;
  /** Runs one store call, failing it when the store takes too long (the watcher's `timeout`). */
  call<T>(read: () => T | PromiseLike<T>): Promise<T>;
  /** Applies a change to the limiter's live list. */
  change(change: DenyListChange): void;
  /** Gives the limiter a whole list (`configure({ deny })`). */
  replace(list: readonly DenyEntry[]): void;
  /** Reports entries left out, or a structure gone. */
  warn(code: 'invalid_deny_entry' | 'document_lost', message: string, cause?: unknown): void;
}

export class DenyFollower {
  /** Where the list held is in the store; undefined before the first read, or when the store has no structure. */
  private at: DenyListVersion | undefined = undefined;
  /** The entries held, by match: what a whole read is compared with. */
  private readonly entries = new Map<string, DenyEntry>();
  /** Whether a structure was ever read: only then is its absence a loss. */
  private seen = false;
  /** Whether a read has found no structure stored (so version 1 is the next change). */
  private read0 = false;
  private sliceStart = 0;

  constructor(
    private readonly source: DenyListSource,
    private readonly host: DenyFollowerHost,
  ) {}

  /** Whether the list comes from the store's structure (it exists, or existed and was lost): then the document's `deny` is not read. */
  get active(): boolean {
    return this.seen;
  }

  /** The list's version held. */
  get version(): DenyListVersion | undefined {
    return this.at;
  }

  /** The list held, as a new array (a pass over it: for the rare moment the limiter takes it whole). */
  get list(): readonly DenyEntry[] {
    return markCheckedDenyList([...this.entries.values()]);
  }

  /**
   * A pushed change's text: applied now when it follows the version held (answers true), else the caller reads.
   * Never throws.
   */
  pushed(text: string): boolean {
    const at = this.at;
    const record = readChangeText(text);
    if (record === undefined) return false;
    // The first change of a structure that did not exist when this follower last read (never, not lost) follows it too.
    const follows =
      at === undefined ? !this.seen && this.read0 && record.version === 1 : record.epoch === at.epoch && record.version === at.version + 1;
    if (!follows) return false;
    this.applyRecord(record.version, record.clear, record.remove, record.add, record.epoch);
    return true;
  }

  /** Reads what changed since the version held and applies it. Throws when the store cannot be read. */
  async read(): Promise<void> {
    this.sliceStart = now();
    const answer = await this.host.call(() => this.source.readChanges(this.host.name, this.at));
    if (answer.version === undefined) return this.gone();
    if (answer.changes !== undefined) {
      for (const text of answer.changes) {
        const record = readChangeText(text);
        if (record === undefined || record.epoch !== answer.version.epoch || record.version !== (this.at?.version ?? 0) + 1) {
          // Not a change this follower can place: read the list whole instead.
          return this.readWhole();
        }
        this.applyRecord(record.version, record.clear, record.remove, record.add, record.epoch);
        await this.breathe();
      }
      return;
    }
    return this.readWhole();
  }

  private async readWhole(): Promise<void> {
    const name = this.host.name;
    const read = new Map<string, DenyEntry>();
    const bad: SluiceError[] = [];
    let first: DenyListVersion | undefined;
    let cursor = '0';
    do {
      const page = await this.host.call(() => this.source.readPage(name, cursor, PAGE));
      if (first === undefined) {
        if (page.version === undefined) return this.gone();
        first = page.version;
      } else if (page.version?.epoch !== first.epoch) {
        // The structure was made again during the read: start over.
        return this.readWhole();
      }
      for (const entry of this.check(page.entries.map(parse), bad)) read.set(entry.match, entry);
      cursor = page.cursor;
      await this.breathe();
    } while (cursor !== '0');
    this.report(bad, `the deny list read whole at version ${first.version}`);
    // The pages may mix states: the changes after the first page's version are applied over them.
    this.install(read, first);
    const after = await this.host.call(() => this.source.readChanges(name, first));
    if (after.version === undefined) return this.gone();
    if (after.changes === undefined) return; // another whole read on the next turn catches up
    for (const text of after.changes) {
      const record = readChangeText(text);
      if (record === undefined || record.version !== (this.at?.version ?? 0) + 1 || record.epoch !== first.epoch) return;
      this.applyRecord(record.version, record.clear, record.remove, record.add, record.epoch);
    }
  }

  /** Makes `read` the list held, as the difference from the list held when that is small, else whole. */
  private install(read: Map<string, DenyEntry>, at: DenyListVersion): void {
    const remove: string[] = [];
    const add: DenyEntry[] = [];
    for (const match of this.entries.keys()) if (!read.has(match)) remove.push(match);
    for (const [match, entry] of read) if (!sameEntry(this.entries.get(match), entry)) add.push(entry);
    const whole = !this.seen || remove.length + add.length > Math.max(4096, read.size / 4);
    this.entries.clear();
    for (const [match, entry] of read) this.entries.set(match, entry);
    this.at = at;
    this.seen = true;
    if (whole) this.host.replace(this.list);
    else if (remove.length + add.length > 0) this.host.change({ remove, add });
  }

  private applyRecord(version: number, clear: boolean, remove: readonly unknown[], add: readonly unknown[], epoch: string): void {
    const bad: SluiceError[] = [];
    const removed = remove.filter((match): match is string => typeof match === 'string' && match.length > 0);
    const added = this.check(add, bad);
    this.report(bad, `change ${version} of the deny list`);
    if (clear) this.entries.clear();
    for (const match of removed) this.entries.delete(match);
    for (const entry of added) this.entries.set(entry.match, entry);
    this.at = { epoch, version };
    this.seen = true;
    this.host.change({ ...(clear ? { clear } : {}), remove: removed, add: added });
  }

  /** The valid entries of `values`; the others go to `bad`. */
  private check(values: readonly unknown[], bad: SluiceError[]): readonly DenyEntry[] {
    return checkDenyList(values, 'deny', (_index, error) => void bad.push(error));
  }

  private report(bad: readonly SluiceError[], where: string): void {
    if (bad.length === 0) return;
    const first = bad
      .slice(0, 3)
      .map((error) => error.detail)
      .join('; ');
    const more = bad.length > 3 ? ` and ${bad.length - 3} more` : '';
    this.host.warn(
      'invalid_deny_entry',
      `${where}: ${bad.length} deny ${bad.length === 1 ? 'entry is' : 'entries are'} not valid and ignored, the other entries apply: ${first}${more}`,
      bad[0],
    );
  }

  /** No structure is stored. After one was read, the store lost it: the list held stays, with one warning. */
  private gone(): void {
    if (!this.seen) {
      this.read0 = true;
      return;
    }
    if (this.at === undefined) return; // warned already
    this.at = undefined;
    this.host.warn(
      'document_lost',
      `the stored deny list is gone (the store restarted empty?); keeping its ${this.entries.size} ${this.entries.size === 1 ? 'entry' : 'entries'}: restore it (sluice config import) or add entries again`,
    );
  }

  /** A timer turn when this slice of work has lasted SLICE_MS. */
  private async breathe(): Promise<void> {
    if (now() - this.sliceStart < SLICE_MS) return;
    await new Promise<void>((resolve) => timers.setTimeout(resolve, 0));
    this.sliceStart = now();
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function sameEntry(a: DenyEntry | undefined, b: DenyEntry): boolean {
  return a !== undefined && a.match === b.match && a.until === b.until && a.reason === b.reason && a.addedAt === b.addedAt;
}

const clock = globalThis as unknown as { performance?: { now(): number } };
export function nowMs(): number {
  return now();
}
function now(): number {
  return clock.performance?.now() ?? Date.now();
}
