/**
 * A `tune` worker thread (see tune-threads.ts): parses the lines of a job, either a byte range of a regular file,
 * which it reads itself, or a block of complete lines the main thread cut (standard input, gzip), and answers, per
 * job, the parsed lines as (identity, time) in line order, the names of the identities it met for the first time,
 * and what it skipped. Its identity numbers are its own; the main thread maps them to global ones in input order,
 * so identities are numbered as one thread numbers them.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { IdentityTable } from './identity.js';
import { LineReader } from './line-reader.js';
import { SKIP_CODES, type LineParser } from './line-result.js';
import { CombinedLineParser } from './parse-combined.js';
import { JsonLineParser, type JsonFields } from './parse-json.js';

export interface WorkerSetup {
  readonly fields: JsonFields;
  readonly strict: boolean;
  readonly ipv6Prefix: number;
  readonly maxLineBytes: number;
}

/** Complete lines, newline-separated, cut by the main thread (standard input, gzip). */
export interface BytesJob {
  readonly format: 'json' | 'combined';
  readonly bytes: Uint8Array;
}

/**
 * The lines of a regular file that start at a byte in [start, end): the worker reads them itself, so the main
 * thread neither reads nor copies the input. A line starting before `start` is the previous range's; the last line
 * is read past `end` to its newline.
 */
export interface RangeJob {
  readonly format: 'json' | 'combined';
  readonly path: string;
  readonly start: number;
  readonly end: number;
}

export type WorkerJob = BytesJob | RangeJob;

export interface WorkerAnswer {
  /** Parsed lines, in line order: this worker's identity number and epoch ms. */
  readonly ids: Int32Array;
  readonly times: Float64Array;
  /** Names of this worker's identities numbered since the last answer, in number order. */
  readonly names: string[];
  /** Non-blank lines read, and skipped by reason (`SKIP_CODES` order). */
  readonly lines: number;
  readonly skipped: number[];
  readonly scanned: number;
  readonly jsonParsed: number;
  /** A range job's read error: the lines before it are answered, the input's later ranges are not read. */
  readonly error?: string;
}

/** Bytes read at once from a range job's file. */
const READ_BYTES = 1 << 20;

/** Feeds `reader` the lines of `path` that start in [start, end) (see `RangeJob`), then ends it. */
function readRange(reader: LineReader, buffer: Buffer, path: string, start: number, end: number): void {
  const fd = openSync(path, 'r');
  try {
    // From the byte before `start`: when it is a newline, a line starts at `start`.
    let position = start === 0 ? 0 : start - 1;
    let skipping = start > 0;
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, position);
      if (read === 0) break;
      const chunk = buffer.subarray(0, read);
      let from = 0;
      if (skipping) {
        const nl = chunk.indexOf(10);
        if (nl === -1) {
          position += read;
          continue;
        }
        skipping = false;
        from = nl + 1;
        if (position + from >= end) break;
      }
      // The last line this range owns starts before `end`: stop at the first newline from byte end - 1 on.
      const last = end - 1 - position;
      if (last < read) {
        const nl = chunk.indexOf(10, Math.max(from, last));
        if (nl !== -1) {
          reader.push(chunk.subarray(from, nl + 1));
          break;
        }
      }
      reader.push(chunk.subarray(from));
      position += read;
    }
  } finally {
    closeSync(fd);
  }
}

function serve(setup: WorkerSetup): void {
  const identities = new IdentityTable(setup.ipv6Prefix);
  const json = new JsonLineParser(setup.fields, identities, setup.strict);
  const combined = new CombinedLineParser(identities);
  let parser: LineParser = json;
  let ids = new Int32Array(1 << 14);
  let times = new Float64Array(1 << 14);
  let count = 0;
  let skipped = new Array<number>(SKIP_CODES.length).fill(0);
  const reader = new LineReader(
    {
      newText: () => parser.newText(),
      skip: (code) => skipped[-1 - code]!++,
      line: (text, start, end) => {
        const identity = parser.parse(text, start, end);
        if (identity < 0) {
          skipped[-1 - identity]!++;
          return;
        }
        if (count === ids.length) {
          const longerIds = new Int32Array(count * 2);
          longerIds.set(ids);
          ids = longerIds;
          const longerTimes = new Float64Array(count * 2);
          longerTimes.set(times);
          times = longerTimes;
        }
        ids[count] = identity;
        times[count++] = parser.time;
      },
    },
    setup.maxLineBytes,
  );
  let namesSent = 0;
  let lines = 0;
  let scanned = 0;
  let jsonParsed = 0;
  let buffer: Buffer | undefined;
  parentPort!.on('message', (job: WorkerJob) => {
    parser = job.format === 'json' ? json : combined;
    count = 0;
    let error: string | undefined;
    if ('path' in job) {
      buffer ??= Buffer.allocUnsafe(READ_BYTES);
      try {
        readRange(reader, buffer, job.path, job.start, job.end);
      } catch (failure) {
        error = (failure as Error).message;
      }
      // The range's last line even without a newline; after an error, what was read of a partial line.
      reader.end();
    } else {
      reader.readLines(Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength));
    }
    const answer: WorkerAnswer = {
      ids: ids.slice(0, count),
      times: times.slice(0, count),
      names: identities.names.slice(namesSent),
      lines: reader.lines - lines,
      skipped,
      scanned: json.scanned - scanned,
      jsonParsed: json.parsed - jsonParsed,
      ...(error === undefined ? {} : { error }),
    };
    namesSent = identities.names.length;
    lines = reader.lines;
    scanned = json.scanned;
    jsonParsed = json.parsed;
    skipped = new Array<number>(SKIP_CODES.length).fill(0);
    parentPort!.postMessage(answer, [answer.ids.buffer as ArrayBuffer, answer.times.buffer as ArrayBuffer]);
  });
}

serve(workerData as WorkerSetup);
