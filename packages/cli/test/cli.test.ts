import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TuneReport } from '../src/index.js';
import { tempFile } from './helpers.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

function sluice(args: string[], input?: Buffer) {
  const result = spawnSync(process.execPath, [CLI, ...args], { input, maxBuffer: 1 << 28, encoding: 'buffer', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.toString('utf8') };
}

let plain: string;
let gzipped: string;

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build the package first (pnpm --filter @sluice/cli build)`);
  plain = tempFile('', '.jsonl');
  gzipped = tempFile('', '.log'); // no .gz: gzip is detected by its magic bytes, not the name
  expect(sluice(['generate-logs', '--lines', '3000', '--seed', '5', '--rate', '20', '-o', plain]).status).toBe(0);
  expect(sluice(['generate-logs', '--lines', '3000', '--seed', '5', '--rate', '20', '--gzip', '-o', gzipped]).status).toBe(0);
});

const ARGS = ['--json', '--limits', '20,40', '--window', '1m', '--rule', 'gcra:20/1m:burst=10'];
const parse = (stdout: Buffer) => JSON.parse(stdout.toString('utf8')) as TuneReport;
const stable = (r: TuneReport) => ({ ...r, inputs: [], elapsedMs: 0, bytes: 0 });

describe('the sluice binary', () => {
  it('generates the same log for the same seed, gzipped or not', () => {
    expect(gunzipSync(readFileSync(gzipped)).equals(readFileSync(plain))).toBe(true);
    expect(readFileSync(plain).toString('utf8').split('\n').filter(Boolean)).toHaveLength(3000);
  });

  it('reads a gzip file and standard input (plain and gzip) to the same report as the plain file', () => {
    const fromFile = sluice(['tune', plain, ...ARGS]);
    expect(fromFile.stderr).toBe('');
    expect(fromFile.status).toBe(0);
    const expected = stable(parse(fromFile.stdout));
    expect(expected.lines.read).toBe(3000);
    expect(expected.candidates.some((c) => c.requestsRefused > 0)).toBe(true);
    for (const [args, input] of [
      [[gzipped], undefined],
      [[], readFileSync(plain)],
      [['-'], readFileSync(gzipped)],
    ] as const) {
      const run = sluice(['tune', ...args, ...ARGS], input);
      expect(run.status, run.stderr).toBe(0);
      expect(stable(parse(run.stdout))).toEqual(expected);
    }
  });

  it('prints --json with the documented shape', () => {
    const report = parse(sluice(['tune', plain, ...ARGS]).stdout);
    expect(Object.keys(report).sort()).toEqual(
      [
        'busiest',
        'bytes',
        'candidates',
        'elapsedMs',
        'exactFixedWindow',
        'formats',
        'identities',
        'inputErrors',
        'inputs',
        'lines',
        'maxAffected',
        'order',
        'peakHistogram',
        'peakPerUser',
        'periodMs',
        'recommendations',
        'time',
        'timeline',
        'userPeriods',
        'version',
      ].sort(),
    );
    expect(report.candidates.map((c) => c.label)).toEqual(['gcra:20/1m:burst=10', 'fixed-window:20/1m', 'fixed-window:40/1m']);
    expect(Object.keys(report.candidates[0]!).sort()).toEqual(
      [
        'algorithm',
        'label',
        'limit',
        'requestsRefused',
        'requestsRefusedShare',
        'userPeriodsAffected',
        'userPeriodsAffectedShare',
        'usersAffected',
        'usersAffectedShare',
        'windowMs',
        'withinTarget',
      ].sort(),
    );
    expect(report.maxAffected).toBe(0.001);
    expect(report.timeline.buckets.reduce((sum, b) => sum + b.requests, 0)).toBe(report.lines.replayed);
  });

  it('prints the summary table, and the progress bar on stderr when asked', () => {
    const run = sluice(['tune', plain, '--limits', '20,40', '--progress']);
    expect(run.status).toBe(0);
    const text = run.stdout.toString('utf8');
    expect(text).toMatch(/Read 3,000 lines/);
    expect(text).toMatch(/fixed-window:20\/1m\s+\d/);
    expect(text).toMatch(/Requests per identity per 1m\s+p50\s+p99\s+p99\.9\s+max/);
    expect(run.stderr).toMatch(/lines\/s/);
    expect(sluice(['tune', plain, '--limits', '20']).stderr).toBe(''); // stderr is not a terminal here
  });

  it('names the flag and what it accepts when a flag is wrong, with exit code 2', () => {
    const badRule = sluice(['tune', plain, '--rule', 'fast:100']);
    expect(badRule.status).toBe(2);
    expect(badRule.stderr).toContain('--rule "fast:100" must look like ALGORITHM:LIMIT/WINDOW');
    const badShare = sluice(['tune', plain, '--max-affected', '5']);
    expect(badShare.stderr).toContain('--max-affected must be a share from 0 to 1 or a percentage');
    const badAlgorithm = sluice(['tune', plain, '--limits', '5', '--algorithm', 'leaky']);
    expect(badAlgorithm.stderr).toContain('--algorithm must be one of fixed-window (fw)');
    const missing = sluice(['tune', '/nonexistent/access.log']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('cannot read input "/nonexistent/access.log"');
  });
});
