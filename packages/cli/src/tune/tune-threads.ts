/**
 * `tune` on several threads: parsing, most of the work (the field scan, time and address parsing and the identity
 * lookups: about three quarters of one thread's CPU time in `pnpm bench tune`), runs in worker threads; the replay
 * stays on the main thread, which alone sees every line in input order, so the result is exactly one thread's.
 *
 * A regular file (not gzip) is cut into byte ranges of `RANGE_BYTES` that the workers read themselves, each the
 * lines that start in its range, so the main thread never reads, copies or transfers the input; any other input
 * (standard input, gzip) is read by the main thread and cut at line boundaries into jobs of about `JOB_BYTES`.
 * Jobs go to the workers in turn and their answers are taken back in the same order. A line is read the same
 * whichever range or chunk holds it (line-reader.ts decides every rule per line).
 *
 * Each worker numbers identities on its own; the main thread gives a worker's identity its global number when it
 * meets its first line, in input order, which is the order one thread numbers them in. Skipped lines are counted
 * where they are found, and counts do not depend on order. Lines are then reordered and replayed as on one thread.
 */
import { isUtf8 } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { LineReader } from './line-reader.js';
import type { WorkerAnswer, WorkerJob, WorkerSetup } from './tune-worker.js';

/** Bytes per job: large enough that a message costs little per line, small enough to keep every worker busy. */
const JOB_BYTES = 1 << 20;
/** Bytes of a regular file per range job (the worker reads them itself), for the same reasons. */
export const RANGE_BYTES = 1 << 20;
/** Jobs handed out and not yet applied, per worker: one being parsed, the next queued, one answered. */
const IN_FLIGHT_PER_WORKER = 3;

/** Identity names numbered in input order, as `IdentityTable.names` is. */
export class IdentityNames {
  readonly names: string[] = [];
  private readonly numbers = new Map<string, number>();

  number(name: string): number {
    let n = this.numbers.get(name);
    if (n === undefined) {
      n = this.names.length;
      this.numbers.set(name, n);
      this.names.push(name);
    }
    return n;
  }
}

interface Pending {
  resolve(answer: WorkerAnswer): void;
  reject(error: Error): void;
}

export class ParserThreads {
  lines = 0;
  scanned = 0;
  jsonParsed = 0;
  private readonly workers: Worker[];
  /** Per worker, its jobs not yet answered, oldest first (a worker answers in the order it was asked). */
  private readonly waiting: Pending[][];
  /** Every job not yet applied, in input order, with the index of the input it reads. */
  private readonly jobs: Array<{ worker: number; answer: Promise<WorkerAnswer>; input: number }> = [];
  /** Inputs a range job failed to read, with the error: their later jobs' lines are dropped, as one thread stops. */
  readonly readErrors = new Map<number, string>();
  /** Per worker: its identity numbers' global numbers (-1: not met yet) and names. */
  private remaps: Int32Array[];
  private readonly localNames: string[][];
  private next = 0;
  /** A worker's error: the run fails with it (it is no input's fault). */
  failure: Error | undefined;

  constructor(
    setup: WorkerSetup,
    threads: number,
    private readonly identities: IdentityNames,
    private readonly skipped: number[],
    private readonly onLine: (identity: number, time: number) => void,
  ) {
    // Beside this module in dist/ (the CommonJS build has no import.meta).
    const script =
      typeof __filename === 'string' ? join(dirname(__filename), 'tune-worker.js') : new URL('./tune-worker.js', import.meta.url);
    this.workers = [];
    this.waiting = [];
    this.remaps = [];
    this.localNames = [];
    for (let i = 0; i < threads; i++) {
      const worker = new Worker(script, { workerData: setup });
      const waiting: Pending[] = [];
      worker.on('message', (answer: WorkerAnswer) => waiting.shift()?.resolve(answer));
      worker.on('error', (error) => this.fail(error));
      worker.on('exit', (code) => {
        if (waiting.length > 0) this.fail(new Error(`tune: a parsing thread exited (code ${code}) with work pending`));
      });
      this.workers.push(worker);
      this.waiting.push(waiting);
      this.remaps.push(new Int32Array(1 << 10).fill(-1));
      this.localNames.push([]);
    }
  }

  /** Counts a line skipped on the main thread. */
  skip(code: number): void {
    this.skipped[-1 - code]!++;
  }

  /** Hands a job reading input number `input` to the next worker. */
  dispatch(job: WorkerJob, input: number): void {
    if (this.failure !== undefined) throw this.failure;
    const worker = this.next++ % this.workers.length;
    const answer = new Promise<WorkerAnswer>((resolve, reject) => this.waiting[worker]!.push({ resolve, reject }));
    // Handled when applied; a rejection before then must not count as unhandled.
    answer.catch(() => {});
    if ('bytes' in job) this.workers[worker]!.postMessage(job, [job.bytes.buffer as ArrayBuffer]);
    else this.workers[worker]!.postMessage(job);
    this.jobs.push({ worker, answer, input });
  }

  /** Applies answers, in input order, until at most `pending` jobs are out (`0`: all of them). */
  async settle(pending = IN_FLIGHT_PER_WORKER * this.workers.length): Promise<void> {
    while (this.jobs.length > pending) {
      const { worker, answer, input } = this.jobs.shift()!;
      this.apply(worker, await answer, input);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private apply(worker: number, answer: WorkerAnswer, input: number): void {
    const names = this.localNames[worker]!;
    for (const name of answer.names) names.push(name);
    // Past a read error one thread reads nothing more of that input (the worker's new names are still its own).
    if (this.readErrors.has(input)) return;
    if (answer.error !== undefined) this.readErrors.set(input, answer.error);
    let remap = this.remaps[worker]!;
    if (remap.length < names.length) {
      let length = remap.length;
      while (length < names.length) length *= 2;
      const longer = new Int32Array(length).fill(-1);
      longer.set(remap);
      this.remaps[worker] = remap = longer;
    }
    const { ids, times } = answer;
    const identities = this.identities;
    const onLine = this.onLine;
    for (let i = 0; i < ids.length; i++) {
      const local = ids[i]!;
      let identity = remap[local]!;
      if (identity < 0) remap[local] = identity = identities.number(names[local]!);
      onLine(identity, times[i]!);
    }
    this.lines += answer.lines;
    this.scanned += answer.scanned;
    this.jsonParsed += answer.jsonParsed;
    for (let k = 0; k < this.skipped.length; k++) this.skipped[k]! += answer.skipped[k]!;
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiting of this.waiting) for (const pending of waiting.splice(0)) pending.reject(error);
  }
}

/**
 * Cuts one input into jobs at line boundaries, with `LineReader`'s own rules for over-long lines (skipped and
 * counted here, so at most `maxLineBytes` of a partial line is ever held).
 */
export class JobReader extends LineReader {
  private parts: Buffer[] = [];
  private bytes = 0;
  private format: 'json' | 'combined' | undefined;

  constructor(
    private readonly threads: ParserThreads,
    private readonly input: number,
    maxLineBytes: number,
    private readonly chooseFormat: (bytes: Buffer) => 'json' | 'combined' | undefined,
  ) {
    super({ newText() {}, line() {}, skip: (code) => threads.skip(code) }, maxLineBytes);
  }

  /** The format chosen for this input, once a line could be parsed. */
  get chosen(): 'json' | 'combined' | undefined {
    return this.format;
  }

  override end(): void {
    super.end();
    this.flush();
  }

  protected override block(bytes: Buffer): void {
    this.format ??= this.chooseFormat(bytes);
    this.parts.push(bytes);
    this.bytes += bytes.length + 1;
    if (this.bytes >= JOB_BYTES) this.flush();
  }

  private flush(): void {
    if (this.parts.length === 0) return;
    // One copy of the blocks, newline-separated, into memory the worker takes over (its own ArrayBuffer, not
    // zero-filled first: every byte is written below).
    const job = Buffer.allocUnsafeSlow(this.bytes - 1);
    let at = 0;
    for (const part of this.parts) {
      if (at > 0) job[at++] = 10;
      job.set(part, at);
      at += part.length;
    }
    this.parts = [];
    this.bytes = 0;
    // Before a line could be parsed any parser will do: the job has no line to parse.
    this.threads.dispatch({ format: this.format ?? 'json', bytes: job }, this.input);
  }
}

/**
 * The first character of the first line of `bytes` that the parser would be handed (non-blank, at most
 * `maxLineBytes`, valid UTF-8), as `LineReader` decides; -1 when there is none.
 */
export function firstParsedCharacter(bytes: Buffer, maxLineBytes: number): number {
  for (let start = 0; start <= bytes.length;) {
    let nl = bytes.indexOf(10, start);
    if (nl === -1) nl = bytes.length;
    let end = nl;
    while (end > start && (bytes[end - 1] === 13 || bytes[end - 1] === 32 || bytes[end - 1] === 9)) end--;
    if (end > start && nl - start <= maxLineBytes && isUtf8(bytes.subarray(start, nl))) return bytes[start]!;
    start = nl + 1;
  }
  return -1;
}

/**
 * How a regular file is read on threads: `undefined` when it is gzip (its bytes cannot be cut by range), else the
 * format of its first line the parser would be handed, as `JobReader` chooses it (`undefined` inside `format`
 * when the file has no such line).
 */
export function plainFileFormat(
  path: string,
  maxLineBytes: number,
  format: 'auto' | 'json' | 'combined',
): { format: 'json' | 'combined' | undefined } | undefined {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(1 << 16);
    let read = readSync(fd, buffer, 0, buffer.length, 0);
    if (read >= 2 && buffer[0] === 0x1f && buffer[1] === 0x8b) return undefined;
    if (format !== 'auto') return { format };
    let first = -1;
    const reader = new LineReader(
      {
        newText() {},
        skip() {},
        line(text, start) {
          if (first === -1) first = text.charCodeAt(start);
        },
      },
      maxLineBytes,
    );
    for (let position = 0; read > 0 && first === -1;) {
      reader.push(buffer.subarray(0, read));
      position += read;
      read = readSync(fd, buffer, 0, buffer.length, position);
    }
    if (first === -1) reader.end();
    return { format: first === -1 ? undefined : first === 123 ? 'json' : 'combined' };
  } finally {
    closeSync(fd);
  }
}
