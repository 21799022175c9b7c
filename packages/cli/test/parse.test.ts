import { describe, expect, it } from 'vitest';
import { generateLogLines, parseRuleFlag } from '../src/index.js';
import { iso, LOG_START, tuneText } from './helpers.js';

const line = (fields: Record<string, unknown>) => JSON.stringify(fields);

describe('JSON lines', () => {
  it('reads the time, user id and IP, and counts each malformed line by reason without stopping', async () => {
    const text = [
      line({ time: iso(LOG_START), ip: '203.0.113.1', user_id: 'alice' }),
      '{"time":"2024-05-01T00:00:01Z","ip":"203.0.113.1","user_id":"al', // truncated write
      'not json at all',
      '[1,2,3]',
      line({ ip: '203.0.113.1', user_id: 'alice' }), // no time
      line({ time: 'yesterday-ish', user_id: 'alice' }), // unreadable time
      line({ time: iso(LOG_START), user_id: true }), // user id of the wrong type
      line({ time: iso(LOG_START), ip: 'not-an-ip' }), // anonymous, no readable IP
      line({ time: iso(LOG_START + 5), ip: '203.0.113.9' }),
      '',
      line({ time: LOG_START / 1000 + 2, user_id: 42 }), // epoch seconds, numeric id
    ].join('\n');
    const report = await tuneText(text);
    expect(report.lines.read).toBe(10); // the blank line is not a line
    expect(report.lines.replayed).toBe(3);
    expect(report.lines.skippedByReason).toMatchObject({ notJson: 3, noTime: 1, badTime: 1, badUser: 1, noIdentity: 1 });
    expect(report.lines.skipped).toBe(7);
    expect(report.identities).toEqual({ total: 3, users: 2, ips: 1 });
    expect(report.time.first).toBe(LOG_START);
    expect(report.time.last).toBe(LOG_START + 2000);
  });

  it('reads escaped strings, nested fields and repeated keys as JSON.parse does', async () => {
    const text = [
      // An escaped quote: the scan hands the line to JSON.parse, which unescapes the id.
      `{"time":"${iso(LOG_START)}","user_id":"a\\"b","ua":"x"}`,
      // A key spelled with an escape is still the key.
      `{"time":"${iso(LOG_START)}","user\\u005fid":"escaped-key"}`,
      // The same key twice: JSON.parse keeps the last.
      `{"time":"${iso(LOG_START)}","user_id":"first","user_id":"last"}`,
      // The key's text as a value, before the real key.
      `{"time":"${iso(LOG_START)}","note":"user_id","user_id":"after-value"}`,
      // A nested object holding the same key name: only the top-level field counts.
      `{"time":"${iso(LOG_START)}","ip":"198.51.100.2","meta":{"user_id":"nested"}}`,
    ].join('\n');
    const report = await tuneText(text);
    const ids = report.busiest.map((b) => b.identity).sort();
    expect(ids).toEqual(['ip:198.51.100.2', 'user:a"b', 'user:after-value', 'user:escaped-key', 'user:last']);
    expect(report.lines.jsonParsed).toBe(4);
    expect(report.lines.scanned).toBe(1);
  });

  it('reads a dotted --user-field path through JSON.parse', async () => {
    const report = await tuneText(`{"ts":${LOG_START},"req":{"user":{"id":"u7"}}}\n`, { fields: { user: 'req.user.id', time: 'ts' } });
    expect(report.busiest[0]?.identity).toBe('user:u7');
  });

  it('reads a line with a 15 kB field, and skips (and counts) one longer than --max-line-bytes', async () => {
    const big = 'x'.repeat(15_000);
    const text = [line({ time: iso(LOG_START), user_id: big, ua: big }), line({ time: iso(LOG_START), user_id: 'small' })].join('\n');
    const report = await tuneText(text);
    expect(report.lines.replayed).toBe(2);
    expect(report.busiest.map((b) => b.identity)).toContain(`user:${big}`);
    const limited = await tuneText(text, { maxLineBytes: 20_000 });
    expect(limited.lines.skippedByReason.tooLong).toBe(1);
    expect(limited.lines.replayed).toBe(1);
  });

  it('measures a line against --max-line-bytes with its trailing CR, as it does a line cut across two chunks', async () => {
    const head = `{"time":"${iso(LOG_START)}","user_id":"`;
    const sized = (bytes: number) => `${head}${'u'.repeat(bytes - head.length - 2)}"}`;
    // 64 bytes and a CR: too long for 64; 63 and a CR: read; a blank line of 100 spaces: too long, never blank.
    const report = await tuneText(`${sized(64)}\r\n${sized(63)}\r\n${' '.repeat(100)}\n`, { maxLineBytes: 64 });
    expect(report.lines.skippedByReason.tooLong).toBe(2);
    expect(report.lines.replayed).toBe(1);
  });

  it('skips lines that are not UTF-8 and decodes multi-byte user ids', async () => {
    const good = Buffer.from(`${line({ time: iso(LOG_START), user_id: 'zoë-日本' })}\n`);
    const bad = Buffer.concat([
      Buffer.from(`{"time":"${iso(LOG_START)}","user_id":"`),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}\n'),
    ]);
    const report = await tuneText(Buffer.concat([good, bad, good]));
    expect(report.lines.skippedByReason.invalidUtf8).toBe(1);
    expect(report.lines.replayed).toBe(2);
    expect(report.busiest[0]).toEqual({ identity: 'user:zoë-日本', peak: 2 });
  });

  it('gives the same report with the field scan and with JSON.parse on every line (--strict)', async () => {
    const text = [...generateLogLines({ lines: 20_000, seed: 7 })].join('');
    const candidates = [parseRuleFlag('fixed-window:20/1m'), parseRuleFlag('gcra:10/1m:burst=5')];
    const fast = await tuneText(text, { candidates });
    const strict = await tuneText(text, { candidates, strict: true });
    expect(fast.lines.scanned).toBeGreaterThan(19_000);
    expect(strict.lines.scanned).toBe(0);
    const comparable = (r: typeof fast) => ({ ...r, elapsedMs: 0, inputs: [], lines: { ...r.lines, scanned: 0, jsonParsed: 0 } });
    expect(comparable(fast)).toEqual(comparable(strict));
  });
});

describe('common and combined log format', () => {
  it('takes authuser as the user, else the host, and counts lines of another shape', async () => {
    const text = [
      '203.0.113.7 - frank [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 2326',
      '203.0.113.7 - - [10/Oct/2000:13:55:37 -0700] "GET /b HTTP/1.1" 200 12 "http://example.com/" "curl/8"',
      '2001:db8:1:2::7 - - [10/Oct/2000:13:55:38 -0700] "GET /c HTTP/1.1" 404 0 "-" "-"',
      'host.example.com - - [10/Oct/2000:13:55:39 -0700] "GET / HTTP/1.1" 200 1 "-" "-"', // HostnameLookups on
      '203.0.113.7 - - [10/Oct/2000 13:55:39] "GET / HTTP/1.1" 200 1', // not CLF time
      'garbage',
    ].join('\n');
    const report = await tuneText(text, { format: 'combined' });
    expect(report.formats).toEqual(['combined']);
    expect(report.lines.replayed).toBe(3);
    expect(report.lines.skippedByReason).toMatchObject({ noIdentity: 1, badTime: 1, notAccessLog: 1 });
    expect(report.busiest.map((b) => b.identity).sort()).toEqual(['ip:2001:db8:1::/56', 'ip:203.0.113.7', 'user:frank']);
    expect(report.time.first).toBe(Date.UTC(2000, 9, 10, 20, 55, 36));
  });

  it('is detected from the first line', async () => {
    const text = [...generateLogLines({ lines: 500, format: 'combined', seed: 3 })].join('');
    const report = await tuneText(text);
    expect(report.formats).toEqual(['combined']);
    expect(report.lines.skipped).toBe(0);
    expect(report.lines.replayed).toBe(500);
  });
});
