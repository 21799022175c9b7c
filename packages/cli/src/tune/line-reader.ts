/**
 * Splits chunks of bytes into lines and hands each to a parser without copying it: a chunk's complete lines are
 * checked to be UTF-8 and turned into strings of about 64 KiB at once, one character per byte (latin1): ten times faster than
 * decoding UTF-8 (`pnpm bench tune` output; V8 copies one-byte strings), and the same text wherever the bytes are
 * ASCII, which is all a log's syntax is. Parsers turn the values they keep back into UTF-8 (`utf8Value`). A newline
 * byte never occurs inside a UTF-8 sequence, so cutting at the last one splits no character. A line that is not valid UTF-8 is skipped and
 * counted, never decoded with replacement characters (two different byte strings would read as one identity).
 * A line longer than `maxLineBytes` (its bytes before the newline, trailing CR and blanks included) is skipped and
 * counted; at most that much of a partial line is held between chunks, so memory does not grow with a line that
 * never ends. Every rule is decided per line, whatever the chunk boundaries: one line is read the same by one
 * thread reading chunks and by a worker reading a byte range (tune-threads.ts).
 */
import { isUtf8 } from 'node:buffer';
import { INVALID_UTF8, TOO_LONG } from './line-result.js';

export interface LineHandler {
  /** A line, as `text.slice(start, end)` without its line ending. `text` is the same for a chunk's lines. */
  line(text: string, start: number, end: number): void;
  /** A line skipped before parsing, with its skip code. */
  skip(code: number): void;
  /** Called before the lines of a new text. */
  newText(): void;
}

/** Bytes per string the lines are read from (see `block`). */
const TEXT_BYTES = 1 << 16;

export class LineReader {
  /** Non-blank lines seen, parsed or skipped. */
  lines = 0;
  private pending: Buffer | undefined;
  /** Inside an over-long line: drop bytes until its newline. */
  private discarding = false;

  constructor(
    private readonly handler: LineHandler,
    private readonly maxLineBytes: number,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    if (this.discarding) {
      const nl = chunk.indexOf(10);
      if (nl === -1) return;
      this.discarding = false;
      from = nl + 1;
    }
    const last = chunk.lastIndexOf(10);
    if (last < from) {
      this.hold(chunk.subarray(from));
      return;
    }
    if (this.pending !== undefined) {
      const nl = chunk.indexOf(10, from);
      const tail = chunk.subarray(from, nl);
      const pending = this.pending;
      this.pending = undefined;
      if (pending.length + tail.length > this.maxLineBytes) this.tooLong();
      else this.block(Buffer.concat([pending, tail]));
      from = nl + 1;
    }
    if (last > from) this.block(chunk.subarray(from, last));
    this.pending = undefined;
    if (last + 1 < chunk.length) this.hold(chunk.subarray(last + 1));
  }

  /**
   * Complete lines, newline-separated, the last one without its newline: what a worker thread is handed by the
   * main thread's `LineReader`, which cut them at line boundaries (see tune-threads.ts).
   */
  readLines(bytes: Buffer): void {
    if (bytes.length > 0) this.block(bytes);
  }

  /** The last line when the input does not end with a newline. */
  end(): void {
    if (this.discarding) {
      this.discarding = false;
      return;
    }
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined && pending.length > 0) this.block(pending);
  }

  private hold(bytes: Buffer): void {
    const total = (this.pending?.length ?? 0) + bytes.length;
    if (total > this.maxLineBytes) {
      this.pending = undefined;
      this.discarding = true;
      this.tooLong();
      return;
    }
    // A copy: a view would keep the whole chunk alive while a long line gathers.
    this.pending = this.pending === undefined ? Buffer.from(bytes) : Buffer.concat([this.pending, bytes]);
  }

  protected tooLong(): void {
    this.lines++;
    this.handler.skip(TOO_LONG);
  }

  /**
   * Complete lines, newline-separated, without the final newline: turned into strings of about `TEXT_BYTES` (cut
   * after a line), small enough for V8's young generation, where they die cheaply; a string of a whole 1 MiB chunk
   * is a large object, and those kept the old generation's collector running (`node --trace-gc`).
   */
  protected block(bytes: Buffer): void {
    for (let from = 0; from < bytes.length;) {
      let to = from + TEXT_BYTES >= bytes.length ? -1 : bytes.indexOf(10, from + TEXT_BYTES);
      if (to === -1) to = bytes.length;
      this.piece(bytes.subarray(from, to));
      from = to + 1;
    }
  }

  private piece(bytes: Buffer): void {
    if (isUtf8(bytes)) {
      this.splitText(bytes.toString('latin1'));
      return;
    }
    // Rare: find the invalid lines one by one (an over-long one is counted as such, as `splitText` would).
    let start = 0;
    while (start <= bytes.length) {
      let nl = bytes.indexOf(10, start);
      if (nl === -1) nl = bytes.length;
      const line = bytes.subarray(start, nl);
      if (line.length <= this.maxLineBytes && !isUtf8(line)) {
        this.lines++;
        this.handler.skip(INVALID_UTF8);
      } else {
        this.splitText(line.toString('latin1'));
      }
      start = nl + 1;
    }
  }

  private splitText(text: string): void {
    const handler = this.handler;
    handler.newText();
    const length = text.length;
    let start = 0;
    while (start <= length) {
      let nl = text.indexOf('\n', start);
      if (nl === -1) nl = length;
      if (nl - start > this.maxLineBytes) {
        // Measured with its line ending and blanks, as `push` measures a line that spans chunks: whether a line is
        // too long never depends on where the input was cut (by chunks, or by byte ranges on threads).
        this.lines++;
        handler.skip(TOO_LONG);
      } else {
        let end = nl;
        // Trailing CR (CRLF files) and blanks are not part of the line.
        while (end > start && isTrailingBlank(text.charCodeAt(end - 1))) end--;
        if (end > start) {
          this.lines++;
          handler.line(text, start, end);
        }
      }
      start = nl + 1;
    }
  }
}

function isTrailingBlank(c: number): boolean {
  return c === 13 || c === 32 || c === 9;
}

/** A value cut from a line string (one character per byte) as the UTF-8 text it is. */
export function utf8Value(byteText: string): string {
  for (let i = 0; i < byteText.length; i++) {
    if (byteText.charCodeAt(i) >= 0x80) return Buffer.from(byteText, 'latin1').toString('utf8');
  }
  return byteText;
}
