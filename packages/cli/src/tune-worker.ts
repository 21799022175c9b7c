/**
 * A `tune` worker thread (see tune-threads.ts): parses the blocks of complete lines the main thread hands it and
 * answers, per block, the parsed lines as (identity, time) in line order, the names of the identities it met for
 * the first time, and what it skipped. Its identity numbers are its own; the main thread maps them to global ones
 * in input order, so identities are numbered as one thread numbers them.
 */
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

export interface WorkerJob {
  readonly format: 'json' | 'combined';
  readonly bytes: Uint8Array;
}

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
  parentPort!.on('message', (job: WorkerJob) => {
    parser = job.format === 'json' ? json : combined;
    count = 0;
    reader.readLines(Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength));
    const answer: WorkerAnswer = {
      ids: ids.slice(0, count),
      times: times.slice(0, count),
      names: identities.names.slice(namesSent),
      lines: reader.lines - lines,
      skipped,
      scanned: json.scanned - scanned,
      jsonParsed: json.parsed - jsonParsed,
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
