/**
 * `tune`: reads access logs, replays them through candidate rules and measures the traffic, in one streaming pass.
 * Memory is bounded by the identities (their states and counters) and the reorder window, never by the lines.
 */
import { SluiceError } from '@sluice/core';
import type { Readable } from 'node:stream';
import type { Candidate } from './candidates.js';
import { CombinedLineParser } from './parse-combined.js';
import { IdentityTable } from './identity.js';
import { decodedChunks, inputSource, type InputProgress } from './input.js';
import { LineReader, type LineHandler } from './line-reader.js';
import { SKIP_CODES, SKIP_REASONS, type LineParser, type SkipReason } from './line-result.js';
import { JsonLineParser, type JsonFields } from './parse-json.js';
import { ReorderBuffer } from './reorder.js';
import { firstParsedCharacter, IdentityNames, JobReader, ParserThreads, plainFileFormat, RANGE_BYTES } from './tune-threads.js';
import { Replay } from './replay.js';
import { buildReport, type TuneReport } from './report.js';

export type LogFormat = 'auto' | 'json' | 'combined';

export interface TuneProgress {
  /** Bytes read from the inputs (compressed bytes for gzip). */
  readonly bytes: number;
  /** Total size of the inputs when every one is a regular file. */
  readonly totalBytes: number | undefined;
  readonly lines: number;
}

export interface TuneOptions {
  /** Paths, `-` for standard input. @default ['-'] */
  inputs?: readonly string[];
  /** @default 'auto' (JSON when a file's first line starts with `{`) */
  format?: LogFormat;
  /** JSON field names. @default { user: 'user_id', ip: 'ip', time: 'time' } */
  fields?: Partial<JsonFields>;
  /** Rules to replay; none still measures the traffic and computes the exact fixed-window limit. */
  candidates?: readonly Candidate[];
  /** The period of user-periods and peaks, ms. @default the first candidate's window, else 60000 */
  periodMs?: number;
  /** Largest share of identities a recommended limit may refuse at least once, 0 to 1. @default 0.001 */
  maxAffected?: number;
  /** How far out of order lines may be and still be replayed in time order, ms. @default 2000 */
  reorderMs?: number;
  /** IPv6 clients are grouped by this prefix length, as in @sluice/http. @default 56 */
  ipv6Prefix?: number;
  /** Longer lines are skipped and counted. @default 1048576 */
  maxLineBytes?: number;
  /** Parse every JSON line with JSON.parse instead of the field scan. @default false */
  strict?: boolean;
  /**
   * Threads that parse lines (worker threads; the main thread reads and replays). The report is the same for any
   * number; 1 parses on the main thread. @default 1
   */
  threads?: number;
  /** Called after each chunk read. */
  onProgress?: (progress: TuneProgress) => void;
  /** Standard input, for `-`. @default process.stdin */
  stdin?: Readable;
}

export const DEFAULT_FIELDS: JsonFields = { user: 'user_id', ip: 'ip', time: 'time' };

/** Picks the parser from a file's first line: JSON when it starts with `{`. */
class AutoParser implements LineParser {
  time = 0;
  chosen: LineParser | undefined;
  constructor(
    private readonly json: JsonLineParser,
    private readonly combined: CombinedLineParser,
  ) {}
  newText(): void {
    this.chosen?.newText();
  }
  parse(text: string, start: number, end: number): number {
    if (this.chosen === undefined) {
      this.chosen = text.charCodeAt(start) === 123 ? this.json : this.combined;
      this.chosen.newText();
    }
    const answer = this.chosen.parse(text, start, end);
    this.time = this.chosen.time;
    return answer;
  }
}

/** Reads, replays and reports. Errors name the option and what it accepts. */
export async function tune(options: TuneOptions = {}): Promise<TuneReport> {
  const started = performance.now();
  const candidates = options.candidates ?? [];
  const periodMs = options.periodMs ?? candidates[0]?.windowMs ?? 60_000;
  if (!Number.isSafeInteger(periodMs) || periodMs < 1)
    throw new SluiceError('INVALID_OPTION', `tune: periodMs must be a whole number of ms, at least 1, got ${periodMs}`);
  const maxAffected = options.maxAffected ?? 0.001;
  if (!(maxAffected >= 0 && maxAffected <= 1))
    throw new SluiceError('INVALID_OPTION', `tune: maxAffected must be a share from 0 to 1 (0.001 is 0.1%), got ${maxAffected}`);
  const reorderMs = options.reorderMs ?? 2000;
  if (!Number.isSafeInteger(reorderMs) || reorderMs < 0)
    throw new SluiceError('INVALID_OPTION', `tune: reorderMs must be a whole number of ms, 0 or more, got ${reorderMs}`);
  const maxLineBytes = options.maxLineBytes ?? 1 << 20;
  const format = options.format ?? 'auto';
  if (format !== 'auto' && format !== 'json' && format !== 'combined')
    throw new SluiceError('INVALID_OPTION', `tune: format must be 'auto', 'json' or 'combined', got ${JSON.stringify(format)}`);
  const threads = options.threads ?? 1;
  if (!Number.isSafeInteger(threads) || threads < 1 || threads > 256)
    throw new SluiceError('INVALID_OPTION', `tune: threads must be a whole number from 1 to 256, got ${threads}`);
  const fields = { ...DEFAULT_FIELDS, ...options.fields };
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value !== 'string' || value === '')
      throw new SluiceError('INVALID_OPTION', `tune: fields.${name} must be a non-empty field name, got ${JSON.stringify(value)}`);
  }

  const ipv6Prefix = options.ipv6Prefix ?? 56;
  const identities = new IdentityTable(ipv6Prefix);
  const replay = new Replay(candidates, periodMs);
  const reorder = new ReorderBuffer(reorderMs, (identity, time) => replay.request(identity, time));
  const skipped = new Array<number>(SKIP_CODES.length).fill(0);
  const strict = options.strict ?? false;
  const json = new JsonLineParser(fields, identities, strict);
  const combined = new CombinedLineParser(identities);

  const sources = (options.inputs ?? ['-']).map((name) => {
    try {
      return inputSource(name, options.stdin);
    } catch (error) {
      throw new SluiceError('INVALID_OPTION', `tune: cannot read input ${JSON.stringify(name)}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  });
  const totalBytes = sources.every((s) => s.size !== undefined) ? sources.reduce((sum, s) => sum + s.size!, 0) : undefined;
  const progress: InputProgress = { bytes: 0 };
  const inputErrors: Array<{ input: string; error: string }> = [];
  let lines = 0;
  const formats = new Set<string>();
  // With threads, identities are numbered in `names` on the main thread (see tune-threads.ts).
  const names = threads > 1 ? new IdentityNames() : undefined;
  const pool =
    names === undefined
      ? undefined
      : new ParserThreads({ fields, strict, ipv6Prefix, maxLineBytes }, threads, names, skipped, (identity, time) =>
          reorder.push(identity, time),
        );

  const plainFile = (path: string) => {
    try {
      return plainFileFormat(path, maxLineBytes, format);
    } catch {
      // Unreadable here: read as a stream, which reports the error as one thread does.
      return undefined;
    }
  };

  try {
    for (const [input, source] of sources.entries()) {
      // A regular file, not gzip, on threads: each worker reads its own byte ranges of it.
      const plain = pool !== undefined && source.name !== '-' && source.size !== undefined ? plainFile(source.name) : undefined;
      if (pool !== undefined && plain !== undefined) {
        const size = source.size!;
        for (let start = 0; start < size && !pool.readErrors.has(input); start += RANGE_BYTES) {
          const end = Math.min(size, start + RANGE_BYTES);
          pool.dispatch({ format: plain.format ?? 'json', path: source.name, start, end }, input);
          progress.bytes += end - start;
          await pool.settle();
          options.onProgress?.({ bytes: progress.bytes, totalBytes, lines: lines + pool.lines });
        }
        await pool.settle(0);
        const error = pool.readErrors.get(input);
        if (error !== undefined) inputErrors.push({ input: source.name, error });
        if (plain.format !== undefined) formats.add(plain.format);
        continue;
      }
      let reader: LineReader;
      let chosen: () => string | undefined;
      if (pool === undefined) {
        const parser: LineParser = format === 'json' ? json : format === 'combined' ? combined : new AutoParser(json, combined);
        const handler: LineHandler = {
          newText: () => parser.newText(),
          skip: (code) => skipped[-1 - code]!++,
          line: (text, start, end) => {
            const identity = parser.parse(text, start, end);
            if (identity >= 0) reorder.push(identity, parser.time);
            else skipped[-1 - identity]!++;
          },
        };
        reader = new LineReader(handler, maxLineBytes);
        chosen = () => {
          const used = parser instanceof AutoParser ? parser.chosen : parser;
          return used === undefined ? undefined : used === json ? 'json' : 'combined';
        };
      } else {
        const jobs = new JobReader(pool, input, maxLineBytes, (bytes) => {
          if (format !== 'auto') return format;
          const first = firstParsedCharacter(bytes, maxLineBytes);
          return first === -1 ? undefined : first === 123 ? 'json' : 'combined';
        });
        reader = jobs;
        chosen = () => jobs.chosen;
      }
      try {
        for await (const chunk of decodedChunks(source.open(), progress)) {
          reader.push(chunk);
          if (pool !== undefined) await pool.settle();
          options.onProgress?.({ bytes: progress.bytes, totalBytes, lines: lines + reader.lines + (pool?.lines ?? 0) });
        }
        reader.end();
      } catch (error) {
        if (pool?.failure !== undefined) throw pool.failure;
        // A truncated gzip file (a log still being written) or a read error: keep what was read, say so.
        reader.end();
        inputErrors.push({ input: source.name, error: (error as Error).message });
      }
      // Every line of this input is replayed before the next one's, as on one thread.
      await pool?.settle(0);
      lines += reader.lines;
      const used = chosen();
      if (used !== undefined) formats.add(used);
    }
  } finally {
    await pool?.close();
  }
  lines += pool?.lines ?? 0;
  reorder.flush();
  replay.finish();

  const skippedByReason = {} as Record<SkipReason, number>;
  SKIP_CODES.forEach((reason, i) => (skippedByReason[reason] = skipped[i]!));
  return buildReport({
    inputs: sources.map((s) => s.name),
    inputErrors,
    formats: [...formats],
    bytes: progress.bytes,
    lines,
    skipped: skippedByReason,
    scanned: pool?.scanned ?? json.scanned,
    jsonParsed: pool?.jsonParsed ?? json.parsed,
    reorder: { windowMs: reorderMs, outOfOrder: reorder.outOfOrder, late: reorder.late, forced: reorder.forced },
    identities: names ?? identities,
    replay,
    maxAffected,
    elapsedMs: performance.now() - started,
  });
}

export { SKIP_REASONS };
