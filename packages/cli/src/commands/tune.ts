/** `sluice tune`: the command line over `tune()`. */
import { parseDuration, SluiceError } from '@sluice/core';
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseLimitsFlag, parseRuleFlag, type Candidate } from '../tune/candidates.js';
import { bytes, count } from '../format.js';
import { htmlReport } from '../tune/report-html.js';
import { textReport } from '../tune/report-text.js';
import { tune, type LogFormat, type TuneProgress } from '../tune/tune.js';

interface TuneFlags {
  format: string;
  userField: string;
  ipField: string;
  timeField: string;
  rule: string[];
  limits?: string;
  window: string;
  algorithm: string;
  period?: string;
  maxAffected: string;
  reorder: string;
  ipv6Prefix: string;
  maxLineBytes: string;
  strict?: boolean;
  html?: string;
  json?: boolean;
  progress?: boolean;
  threads: string;
}

/** `0.1%` or `0.001` as the share 0.001. */
export function parseShare(text: string, field: string): number {
  const trimmed = text.trim();
  const value = trimmed.endsWith('%') ? Number(trimmed.slice(0, -1)) / 100 : Number(trimmed);
  if (trimmed === '' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be a share from 0 to 1 or a percentage (0.001 or 0.1%), got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

function wholeNumber(text: string, field: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < min || value > max) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function duration(text: string, field: string, allowZero = false): number {
  if (allowZero && text.trim() === '0') return 0;
  return parseDuration(/^\d+$/.test(text.trim()) ? Number(text) : text, field);
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerTune(program: Command): void {
  program
    .command('tune')
    .description(
      'Replay access logs through candidate rules and recommend a limit (JSON lines or common/combined log format; files or stdin; gzip detected)',
    )
    .argument('[inputs...]', 'log files; - or none for standard input')
    .option('--format <format>', 'auto, json or combined', 'auto')
    .option('--user-field <name>', 'JSON field of the user id (a dotted path reaches into objects)', 'user_id')
    .option('--ip-field <name>', 'JSON field of the client IP, the identity when there is no user id', 'ip')
    .option('--time-field <name>', 'JSON field of the time: ISO 8601, or epoch seconds or ms', 'time')
    .option('--rule <spec>', 'candidate ALGORITHM:LIMIT/WINDOW[:burst=N], repeatable (e.g. sliding-window-counter:100/1m)', collect, [])
    .option('--limits <list>', 'candidate limits, comma-separated, with --window and --algorithm (e.g. 50,100,200)')
    .option('--window <duration>', 'window of the --limits candidates', '1m')
    .option('--algorithm <name>', 'algorithm of the --limits candidates', 'fixed-window')
    .option('--period <duration>', "period of user-periods and peaks (default: the first candidate's window, else 1m)")
    .option('--max-affected <share>', 'largest share of identities a recommended limit may refuse', '0.1%')
    .option('--reorder <duration>', 'replay lines up to this much out of order in time order; 0 keeps file order', '2s')
    .option('--ipv6-prefix <bits>', 'group IPv6 clients by this prefix length, as @sluice/http does (48-64)', '56')
    .option('--max-line-bytes <n>', 'skip (and count) longer lines', String(1 << 20))
    .option('--strict', 'parse every JSON line with JSON.parse (slower; the default scan reads flat lines without escapes)')
    .option(
      '--threads <n>',
      'threads that parse lines; 1 parses on the main thread (the report is the same)',
      String(availableParallelism()),
    )
    .option('--html <file>', 'write an HTML report with charts')
    .option('--json', 'print the report as JSON (no progress bar unless --progress)')
    .option('--progress', 'show the progress bar even when stderr is not a terminal')
    .option('--no-progress', 'never show the progress bar')
    .action(async (inputs: string[], flags: TuneFlags, command: Command) => {
      const candidates: Candidate[] = flags.rule.map(parseRuleFlag);
      if (flags.limits !== undefined) candidates.push(...parseLimitsFlag(flags.limits, flags.window, flags.algorithm));
      const progressSource = command.getOptionValueSource('progress');
      const showProgress = progressSource === 'cli' ? flags.progress === true : !flags.json && process.stderr.isTTY === true;
      const bar = showProgress ? progressBar() : undefined;
      const report = await tune({
        inputs: inputs.length > 0 ? inputs : ['-'],
        format: flags.format as LogFormat,
        fields: { user: flags.userField, ip: flags.ipField, time: flags.timeField },
        candidates,
        periodMs: flags.period === undefined ? undefined : duration(flags.period, '--period'),
        maxAffected: parseShare(flags.maxAffected, '--max-affected'),
        reorderMs: duration(flags.reorder, '--reorder', true),
        ipv6Prefix: wholeNumber(flags.ipv6Prefix, '--ipv6-prefix', 48, 64),
        maxLineBytes: wholeNumber(flags.maxLineBytes, '--max-line-bytes', 1, 2 ** 30),
        strict: flags.strict === true,
        threads: wholeNumber(flags.threads, '--threads', 1, 256),
        onProgress: bar?.update,
      });
      bar?.stop();
      if (flags.html !== undefined) {
        writeFileSync(flags.html, htmlReport(report));
        process.stderr.write(`HTML report written to ${flags.html}\n`);
      }
      process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${textReport(report)}\n`);
    });
}

/** The progress bar on stderr: bytes read of the total when known (files), lines, throughput and ETA. */
function progressBar(): { update: (p: TuneProgress) => void; stop: () => void } {
  let bar: SingleBar | undefined;
  const started = performance.now();
  return {
    update(p) {
      const seconds = (performance.now() - started) / 1000;
      const payload = { lines: count(p.lines), rate: count(seconds > 0 ? p.lines / seconds : 0), read: bytes(p.bytes) };
      if (bar === undefined) {
        const known = p.totalBytes !== undefined && p.totalBytes > 0;
        bar = new SingleBar({
          stream: process.stderr,
          format: known
            ? '{bar} {percentage}% | {read} of {size} | {lines} lines | {rate} lines/s | ETA {eta_formatted}'
            : '{read} | {lines} lines | {rate} lines/s',
          hideCursor: true,
          clearOnComplete: true,
          etaBuffer: 50,
          fps: 5,
          noTTYOutput: process.stderr.isTTY !== true,
          notTTYSchedule: 1000,
        });
        bar.start(known ? p.totalBytes! : 0, 0, { ...payload, size: bytes(p.totalBytes ?? 0) });
      }
      bar.update(p.bytes, payload);
    },
    stop() {
      bar?.stop();
    },
  };
}
