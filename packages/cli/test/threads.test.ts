// `sluice tune --threads N` parses on worker threads; the reports (text, JSON, HTML) must be the very bytes one
// thread writes, on logs with thousands of identities, lines out of order and every kind of skipped line.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { RANGE_BYTES } from '../src/tune/tune-threads.js';
import { tempFile } from './helpers.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

function sluice(args: string[]): string {
  const result = spawnSync(process.execPath, [CLI, ...args], { maxBuffer: 1 << 28, encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) throw new Error(`sluice ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
}

/** Lines that must be skipped (and counted) or replayed out of order, spread through the log. */
function messy(format: 'json' | 'combined', i: number): Buffer {
  const late =
    format === 'json'
      ? `{"time":"2024-05-01T00:00:0${i % 10}Z","user_id":"late-${i % 7}"}`
      : `10.9.9.${i % 250} - - [01/May/2024:00:00:0${i % 10} +0000] "GET / HTTP/1.1" 200 1`;
  const lines = [
    'not a log line at all',
    format === 'json' ? '{"time":"yesterday","user_id":"u1"}' : '1.2.3.4 - - [31/Foo/2024:99:00:00 +0000] "GET / HTTP/1.1" 200 1',
    format === 'json'
      ? '{"time":"2024-05-01T00:10:00Z","user_id":"caf\\u00e9","ua":"a\\"b"}'
      : 'no-ip.example - - [01/May/2024:00:10:00 +0000] "GET / HTTP/1.1" 200 1',
    '',
    '   ',
    late,
    'x'.repeat(3000),
  ];
  return Buffer.concat([Buffer.from(lines.join('\n') + '\r\n'), Buffer.from([0xff, 0xfe, 0x0a])]);
}

function log(format: 'json' | 'combined'): string {
  const clean = tempFile('', `.${format}`);
  sluice(['generate-logs', '--lines', '60000', '--seed', '11', '--users', '5000', '--format', format, '-o', clean]);
  const lines = readFileSync(clean).toString('latin1').split('\n');
  // Lines the parser is never handed come first: the format is still chosen from the first log line.
  const parts: Buffer[] = [Buffer.from([0xff, 0x0a]), Buffer.from(`${'y'.repeat(3000)}\n  \n`)];
  for (let i = 0; i < lines.length; i += 997) {
    parts.push(Buffer.from(lines.slice(i, i + 997).join('\n') + '\n', 'latin1'), messy(format, i));
  }
  // No newline at the end: the last line is read too.
  parts.push(Buffer.from(lines[0]!, 'latin1'));
  return tempFile(Buffer.concat(parts), `.${format}`);
}

/** The reports of one run, without the run's own duration (the only thing allowed to differ). */
function reports(inputs: string[], threads: number) {
  const html = tempFile('', '.html');
  const args = [
    'tune',
    ...inputs,
    '--threads',
    String(threads),
    '--limits',
    '30,60,120',
    '--window',
    '1m',
    '--rule',
    'gcra:60/1m:burst=20',
  ];
  const text = sluice([...args, '--max-line-bytes', '2048', '--html', html, '--no-progress']);
  const json = sluice([...args, '--max-line-bytes', '2048', '--json']);
  return {
    text: text.replace(/ in [\d.]+ s: [\d,]+ lines\/s/, ''),
    json: json.replace(/"elapsedMs": [\d.e+-]+/, ''),
    html: readFileSync(html, 'utf8'),
    report: JSON.parse(json) as { identities: { total: number }; lines: { skipped: number }; order: { late: number } },
  };
}

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build the package first (pnpm --filter @sluice/cli build)`);
});

describe('tune --threads', () => {
  for (const format of ['json', 'combined'] as const) {
    it(`writes the same text, JSON and HTML reports with 1 and 4 threads (${format}, malformed and late lines)`, () => {
      const file = log(format);
      const one = reports([file], 1);
      const four = reports([file], 4);
      // The log is what the test claims: many identities, skipped and late lines.
      expect(one.report.identities.total).toBeGreaterThan(3000);
      expect(one.report.lines.skipped).toBeGreaterThan(200);
      expect(one.report.order.late).toBeGreaterThan(0);
      expect(four.text).toBe(one.text);
      expect(four.json).toBe(one.json);
      expect(four.html).toBe(one.html);
    });
  }

  it('writes the same reports with 1 and 3 threads over several inputs of both formats (format chosen per input)', () => {
    const inputs = [log('combined'), log('json')];
    const one = reports(inputs, 1);
    const three = reports(inputs, 3);
    expect(three.text).toBe(one.text);
    expect(three.json).toBe(one.json);
    expect(three.html).toBe(one.html);
  });
});

describe('tune --threads on byte ranges', () => {
  it('reads lines cut at every kind of range boundary as one thread reads them', () => {
    // Workers read a regular file by ranges of RANGE_BYTES, each the lines that start in it. Put a line start
    // exactly on a boundary, a boundary inside an over-long line, one between a CR and its LF, one inside a line
    // whose bytes are not UTF-8, lines just under and over --max-line-bytes (counting a trailing CR), and a line
    // longer than a range.
    const line = (i: number) => `{"time":"2024-05-01T00:00:${String(i % 60).padStart(2, '0')}.000Z","user_id":"u${i % 500}"}`;
    const parts: string[] = [];
    let size = 0;
    const add = (text: string) => {
      parts.push(text);
      size += Buffer.byteLength(text, 'latin1');
    };
    const fillTo = (offset: number) => {
      for (let i = 0; size + 100 < offset; i++) add(`${line(i)}\n`);
      add(`${'z'.repeat(offset - size - 1)}\n`);
    };
    fillTo(RANGE_BYTES); // the next line starts exactly at the boundary
    fillTo(2 * RANGE_BYTES - 1000);
    add(`${'x'.repeat(3000)}\n`); // over-long, across the boundary
    fillTo(3 * RANGE_BYTES - 1 - line(7).length);
    add(`${line(7)}\r\n`); // its CR is the last byte of a range, its LF the next one's first
    fillTo(4 * RANGE_BYTES - 10);
    add(`{"time":"2024-05-01T00:00:01Z","user_id":"\xff\xfe"}\n`); // invalid UTF-8, across the boundary
    const sized = (bytes: number) => {
      const head = '{"time":"2024-05-01T00:00:02Z","user_id":"a';
      return `${head}${'b'.repeat(bytes - head.length - 2)}"}`;
    };
    add(`${sized(2048)}\r\n`); // 2,049 bytes with its CR: too long for --max-line-bytes 2048
    add(`${sized(2047)}\r\n`); // 2,048 with its CR: read
    fillTo(5 * RANGE_BYTES - 10);
    add(`${'x'.repeat(RANGE_BYTES + 9)}\n`); // a range with no line of its own: it ends where the next starts
    for (let i = 0; i < 2000; i++) add(`${line(i)}\n`);
    const file = tempFile(Buffer.from(parts.join(''), 'latin1'), '.json');
    const one = reports([file], 1);
    const two = reports([file], 2);
    expect(one.report.lines.skipped).toBeGreaterThan(4);
    expect(two.text).toBe(one.text);
    expect(two.json).toBe(one.json);
    expect(two.html).toBe(one.html);
  });

  it('reads a gzip input (cut into jobs by the main thread) beside a plain one, as one thread does', () => {
    const plain = log('json');
    const gzip = tempFile(gzipSync(readFileSync(plain)), '.gz');
    const one = reports([gzip, plain], 1);
    const two = reports([gzip, plain], 2);
    expect(two.text).toBe(one.text);
    expect(two.json).toBe(one.json);
  });
});
