/**
 * The deny list's entries: the shape an entry has in the runtime configuration document (config/document.ts), on
 * the limiter (`limiter.deny`, `configure({ deny })`) and in the writers (config/writers.ts), and the checks of that
 * shape. Core does not parse IP addresses or ranges (that is @sluice/http's job, which matches requests against the
 * list): it checks that `match` is a bounded string without control characters, so that whatever the HTTP layer
 * is given is safe to log and to put in a 403's body.
 */
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';

export interface DenyEntry {
  /** An identity, matched exactly (`user:42`, an API key), or an IP range in CIDR (`203.0.113.0/24`, `2001:db8::/56`) or a single address. */
  readonly match: string;
  /** Epoch ms after which the entry no longer applies (a temporary block), at most MAX_EPOCH_MS; absent: until removed. */
  readonly until?: number;
  /** Why, for the operator and the 403's body; at most 200 characters. */
  readonly reason?: string;
  /** When it was added, epoch ms. */
  readonly addedAt?: number;
}

/** Longest `match`: an API key or a CIDR fits many times over, and a list of 100,000 stays a few megabytes. */
export const MAX_DENY_MATCH_LENGTH = 256;
/** Longest `reason`: it goes into every 403's body. */
export const MAX_DENY_REASON_LENGTH = 200;

const FIELDS = ['match', 'until', 'reason', 'addedAt'];
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Checks one entry and returns a frozen copy holding only its fields. A problem throws a SluiceError
 * (INVALID_OPTION) that names the field, e.g. `deny[3].until: must be an integer from 0 to 8640000000000000 (epoch
 * ms, within what a Date holds), got -1`.
 */
export function checkDenyEntry(value: unknown, field: string): DenyEntry {
  const entry = readDenyEntry(value);
  if (typeof entry === 'string') throw new SluiceError('INVALID_OPTION', field + entry);
  return entry;
}

/**
 * The entry as a frozen copy, or what is wrong with it, as the text that follows the field's name (`.until: must
 * be ...`). The field's name is left to the caller, so a list of 100,000 good entries builds no name at all.
 */
function readDenyEntry(value: unknown): DenyEntry | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `: must be an object such as { "match": "203.0.113.0/24", "reason": "scraper" }, got ${describe(value)}`;
  }
  const entry = value as Record<string, unknown>;
  for (const key in entry) {
    if (Object.hasOwn(entry, key) && key !== 'match' && key !== 'until' && key !== 'reason' && key !== 'addedAt') {
      return `: unknown field ${JSON.stringify(key)}; accepted fields are ${FIELDS.join(', ')}`;
    }
  }
  const { match, until, reason, addedAt } = entry;
  if (
    typeof match !== 'string' ||
    match.length === 0 ||
    match.length > MAX_DENY_MATCH_LENGTH ||
    CONTROL.test(match) ||
    match !== match.trim()
  ) {
    return `.match: must be an identity or an IP range, a non-empty string of at most ${MAX_DENY_MATCH_LENGTH} characters without control characters or spaces around it, got ${describe(match)}`;
  }
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_DENY_REASON_LENGTH)) {
    return `.reason: must be a string of at most ${MAX_DENY_REASON_LENGTH} characters, got ${describe(reason)}`;
  }
  // Written field by field, in the document's order (match, until, reason, addedAt), without a spread per field.
  const copy: { match: string; until?: number; reason?: string; addedAt?: number } = { match };
  if (until !== undefined) {
    if (!isEpochMs(until)) return `.until: ${EPOCH_MS}, got ${describe(until)}`;
    copy.until = until;
  }
  if (reason !== undefined) copy.reason = reason as string;
  if (addedAt !== undefined) {
    if (!isEpochMs(addedAt)) return `.addedAt: ${EPOCH_MS}, got ${describe(addedAt)}`;
    copy.addedAt = addedAt;
  }
  return Object.freeze(copy);
}

/**
 * Checks a whole list strictly (the writers, `configure`): the first bad entry throws. With `onBadEntry`, a bad
 * entry is reported to it and left out instead (how the watcher reads: one bad entry must not cost the rest).
 * Two entries with one `match` are refused (strictly) or the later is left out, so that a match has one reason.
 */
export function checkDenyList(
  value: unknown,
  field: string,
  onBadEntry?: (index: number, error: SluiceError, entry: unknown) => void,
): readonly DenyEntry[] {
  if (!Array.isArray(value)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be an array of entries such as [{ "match": "203.0.113.0/24", "reason": "scraper" }], got ${describe(value)}`,
    );
  }
  const items = value as unknown[];
  const entries: DenyEntry[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const entry = readDenyEntry(items[i]);
    let problem: SluiceError | undefined;
    if (typeof entry === 'string') problem = new SluiceError('INVALID_OPTION', `${field}[${i}]${entry}`);
    else if (seen.has(entry.match)) {
      problem = new SluiceError(
        'INVALID_OPTION',
        `${field}[${i}].match: another entry already matches ${JSON.stringify(entry.match)}; keep one entry per match`,
      );
    }
    if (problem !== undefined) {
      if (onBadEntry === undefined) throw problem;
      onBadEntry(i, problem, items[i]);
      continue;
    }
    const good = entry as DenyEntry;
    seen.add(good.match);
    entries.push(good);
  }
  const list = Object.freeze(entries);
  CHECKED.add(list);
  return list;
}

/**
 * Marks a list of entries that were each checked already (checkDenyEntry, checkDenyList) and have distinct matches
 * as checked, frozen: configure takes it without a second pass over 100,000 entries.
 */
export function markCheckedDenyList(entries: DenyEntry[]): readonly DenyEntry[] {
  const list = Object.freeze(entries);
  CHECKED.add(list);
  return list;
}

/** Lists made by checkDenyList: frozen, entries frozen, so they need no second check (and keep their identity). */
const CHECKED = new WeakSet<readonly DenyEntry[]>();

/** Whether `value` is a list checkDenyList made (then it is valid and cannot have changed since). */
export function isCheckedDenyList(value: unknown): value is readonly DenyEntry[] {
  return typeof value === 'object' && value !== null && CHECKED.has(value as readonly DenyEntry[]);
}

/** Whether two lists hold the same entries in the same order (so a limiter keeps its array, and what was compiled from it). */
export function sameDenyList(a: readonly DenyEntry[], b: readonly DenyEntry[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.match !== y.match || x.until !== y.until || x.reason !== y.reason || x.addedAt !== y.addedAt) return false;
  }
  return true;
}

/**
 * The latest time a JavaScript Date holds (8.64e15 ms, 275760-09-13): an `until` past it is a time no reader can
 * print or compare as a date, however far below 2^53 it is.
 */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;

const EPOCH_MS = `must be an integer from 0 to ${MAX_EPOCH_MS} (epoch ms, within what a Date holds)`;

function isEpochMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_EPOCH_MS;
}
