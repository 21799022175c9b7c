/**
 * JSON-lines access logs. Most lines are read by a targeted scan for the three fields rather than JSON.parse,
 * which builds every field of every line (`pnpm bench tune` prints both speeds). The scan is exact for the lines
 * it accepts: one flat object, no backslash (so no escaped quote or escaped key can fool it), each key present at
 * most once. Any other line (escapes, nested objects, a repeated key, a dotted field name) goes to JSON.parse.
 * The scan does not validate the bytes between the fields: a line that starts with `{`, ends with `}` and holds
 * the fields is read, where JSON.parse would reject a stray character elsewhere. `strict` parses every line.
 */
import type { IdentityTable } from './identity.js';
import { BAD_TIME, BAD_USER, NO_IDENTITY, NO_TIME, NOT_JSON, type LineParser } from './line-result.js';
import { utf8Value } from './line-reader.js';
import { epochToMs, parseIsoTime } from './timestamp.js';

export interface JsonFields {
  /** Field of the user id; a dotted path (`user.id`) reaches into nested objects. @default 'user_id' */
  readonly user: string;
  /** Field of the client address. @default 'ip' */
  readonly ip: string;
  /** Field of the time: ISO 8601 text, or epoch seconds or milliseconds. @default 'time' */
  readonly time: string;
}

/** The scan's "hand this line to JSON.parse" answer (not a skip code: those are -1 to -8). */
const SLOW = -100;
const KIND_OTHER = 0;
const KIND_STRING = 1;
const KIND_NUMBER = 2;
const KIND_NULL = 3;
const KIND_ABSENT = 4;

export class JsonLineParser implements LineParser {
  time = 0;
  /** Lines read by the scan and by JSON.parse: the report shows both so a slow log is explained. */
  scanned = 0;
  parsed = 0;
  private readonly scan: boolean;
  private readonly names: readonly [string, string, string];
  /** Any of the three keys followed by its colon; matches run ahead of the line being read (see `nextKey`). */
  private readonly keyPattern: RegExp;
  private readonly paths: [string[], string[], string[]];
  // Next backslash and next `{` after a line's first character, remembered across lines (-2: not searched).
  private backslashAt = -2;
  private braceAt = -2;
  // The next key match: where its value starts, and which key (0 user, 1 ip, 2 time); -1 none, -2 not searched.
  private keyEnd = -2;
  private keyIndex = 0;
  // Where the current line's values start, -1 when the key is absent.
  private readonly at: [number, number, number] = [-1, -1, -1];
  // The value the last `value` call found: [valueStart, valueEnd).
  private valueStart = 0;
  private valueEnd = 0;

  constructor(
    fields: JsonFields,
    private readonly identities: IdentityTable,
    strict = false,
  ) {
    const names = [fields.user, fields.ip, fields.time] as const;
    this.scan = !strict && names.every((n) => !n.includes('.') && !n.includes('"') && !n.includes('\\'));
    this.names = names;
    this.keyPattern = new RegExp(`"(?:${names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})"[ \\t]*:[ \\t]*`, 'g');
    this.paths = [names[0].split('.'), names[1].split('.'), names[2].split('.')];
  }

  newText(): void {
    this.backslashAt = -2;
    this.braceAt = -2;
    this.keyEnd = -2;
  }

  parse(text: string, start: number, end: number): number {
    if (this.scan) {
      const answer = this.scanLine(text, start, end);
      if (answer !== SLOW) {
        this.scanned++;
        return answer;
      }
    }
    this.parsed++;
    return this.parseLine(utf8Value(text.slice(start, end)));
  }

  private scanLine(text: string, start: number, end: number): number {
    if (text.charCodeAt(start) !== 123 || text.charCodeAt(end - 1) !== 125) return SLOW;
    // Without a backslash no quote is escaped, so every `"name":` is a key; without a second `{`, a top-level one.
    if (this.backslashAt !== -1 && this.backslashAt < start) this.backslashAt = text.indexOf('\\', start);
    if (this.backslashAt !== -1 && this.backslashAt < end) return SLOW;
    if (this.braceAt !== -1 && this.braceAt <= start) this.braceAt = text.indexOf('{', start + 1);
    if (this.braceAt !== -1 && this.braceAt < end) return SLOW;
    const at = this.at;
    at[0] = at[1] = at[2] = -1;
    if (this.keyEnd !== -1 && this.keyEnd < start) this.nextKey(text, start);
    while (this.keyEnd !== -1 && this.keyEnd < end) {
      // JSON.parse keeps the last of repeated keys; the scan would read the first, so it hands such lines over.
      if (at[this.keyIndex] !== -1) return SLOW;
      at[this.keyIndex] = this.keyEnd;
      this.nextKey(text, this.keyEnd);
    }

    const timeKind = at[2] === -1 ? KIND_ABSENT : this.value(text, at[2], end);
    let time: number;
    if (timeKind === KIND_STRING) time = textTime(text, this.valueStart, this.valueEnd);
    else if (timeKind === KIND_NUMBER) time = epochToMs(Number(text.slice(this.valueStart, this.valueEnd)));
    else if (timeKind === KIND_ABSENT || timeKind === KIND_NULL) return NO_TIME;
    else if (timeKind === SLOW) return SLOW;
    else return BAD_TIME;
    if (Number.isNaN(time)) return BAD_TIME;

    const userKind = at[0] === -1 ? KIND_ABSENT : this.value(text, at[0], end);
    if (userKind === SLOW) return SLOW;
    if (userKind === KIND_STRING && this.valueEnd > this.valueStart) {
      this.time = time;
      return this.identities.userAt(text, this.valueStart, this.valueEnd);
    }
    if (userKind === KIND_NUMBER) {
      const raw = text.slice(this.valueStart, this.valueEnd);
      const value = Number(raw);
      if (!Number.isFinite(value)) return BAD_USER;
      this.time = time;
      return this.identities.user(isCanonicalInteger(raw) ? raw : String(value));
    }
    if (userKind === KIND_OTHER) return BAD_USER;

    const ipKind = at[1] === -1 ? KIND_ABSENT : this.value(text, at[1], end);
    if (ipKind === SLOW) return SLOW;
    if (ipKind !== KIND_STRING) return NO_IDENTITY;
    const identity = this.identities.ipAt(text, this.valueStart, this.valueEnd);
    if (identity < 0) return NO_IDENTITY;
    this.time = time;
    return identity;
  }

  /** Finds the next key at or after `from`; one regular expression for the three keys reads the text once. */
  private nextKey(text: string, from: number): void {
    const pattern = this.keyPattern;
    pattern.lastIndex = from;
    if (!pattern.test(text)) {
      this.keyEnd = -1;
      return;
    }
    const end = pattern.lastIndex;
    this.keyEnd = end;
    // Which key: the text before the colon ends with `"name"`; names hold no quote, so one of them fits.
    let q = end - 1;
    while (text.charCodeAt(q) !== 58) q--;
    q--;
    while (text.charCodeAt(q) !== 34) q--;
    for (let k = 0; k < 3; k++) {
      const name = this.names[k]!;
      if (text.charCodeAt(q - name.length - 1) === 34 && text.startsWith(name, q - name.length)) {
        this.keyIndex = k;
        return;
      }
    }
  }

  private value(text: string, p: number, end: number): number {
    const c = text.charCodeAt(p);
    if (c === 34) {
      const close = text.indexOf('"', p + 1);
      if (close === -1 || close >= end) return SLOW;
      this.valueStart = p + 1;
      this.valueEnd = close;
      return KIND_STRING;
    }
    if (c === 45 || (c >= 48 && c <= 57)) {
      let q = p + 1;
      while (q < end && isNumberChar(text.charCodeAt(q))) q++;
      this.valueStart = p;
      this.valueEnd = q;
      return KIND_NUMBER;
    }
    if (c === 110 && text.startsWith('null', p)) return KIND_NULL;
    return KIND_OTHER;
  }

  private parseLine(line: string): number {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      return NOT_JSON;
    }
    if (typeof record !== 'object' || record === null || Array.isArray(record)) return NOT_JSON;
    const rawTime = lookup(record, this.paths[2]);
    if (rawTime === undefined || rawTime === null) return NO_TIME;
    const time =
      typeof rawTime === 'string' ? textTime(rawTime, 0, rawTime.length) : typeof rawTime === 'number' ? epochToMs(rawTime) : NaN;
    if (Number.isNaN(time)) return BAD_TIME;
    const user = lookup(record, this.paths[0]);
    if (typeof user === 'string' && user !== '') {
      this.time = time;
      return this.identities.user(user);
    }
    if (typeof user === 'number') {
      if (!Number.isFinite(user)) return BAD_USER;
      this.time = time;
      return this.identities.user(String(user));
    }
    if (user !== undefined && user !== null && user !== '') return BAD_USER;
    const ip = lookup(record, this.paths[1]);
    const identity = typeof ip === 'string' ? this.identities.ip(ip) : -1;
    if (identity < 0) return NO_IDENTITY;
    this.time = time;
    return identity;
  }
}

function isNumberChar(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45;
}

/** Digits without a leading zero, short enough that String(Number(raw)) === raw. */
function isCanonicalInteger(raw: string): boolean {
  if (raw.length > 15 || raw.length === 0) return false;
  if (raw.charCodeAt(0) === 48 && raw.length > 1) return false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** A time written as text: ISO 8601, or epoch seconds / milliseconds in digits. */
function textTime(text: string, start: number, end: number): number {
  const first = text.charCodeAt(start);
  if (end - start >= 9 && end - start <= 17 && first >= 48 && first <= 57 && text.charCodeAt(start + 4) !== 45) {
    const value = Number(text.slice(start, end));
    if (Number.isFinite(value)) return epochToMs(value);
  }
  return parseIsoTime(text, start, end);
}

function lookup(record: object, path: readonly string[]): unknown {
  let value: unknown = record;
  for (const part of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
