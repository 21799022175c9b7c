/**
 * The field scan (the fast path) and JSON.parse on every line (`strict`) give the same report, on a generated log
 * with every awkward line the parse tests use mixed in: escapes, keys spelled with escapes, repeated keys, nested
 * objects, multi-byte and invalid UTF-8, 15 kB fields, malformed lines of each kind, IPv4 and IPv6 in several
 * spellings, numeric ids and epoch times, spaces around colons, CRLF endings, and times out of order, far behind
 * (the clock stepping back) and far ahead. Replayed through every algorithm, so each core step (and `stepRuleInto`
 * with the replay's reused states) runs on the same input both ways.
 */
import { expect, it } from 'vitest';
import { generateLogLines, parseRuleFlag, type TuneReport } from '../src/index.js';
import { iso, tuneText } from './helpers.js';

const AWKWARD: ReadonlyArray<(at: number) => string | Buffer> = [
  (t) => `{"time":"${iso(t)}","user_id":"a\\"b","ua":"x"}`,
  (t) => `{"time":"${iso(t)}","user\\u005fid":"escaped-key"}`,
  (t) => `{"time":"${iso(t)}","user_id":"first","user_id":"last"}`,
  (t) => `{"time":"${iso(t)}","note":"user_id","user_id":"after-value"}`,
  (t) => `{"time":"${iso(t)}","ip":"198.51.100.2","meta":{"user_id":"nested"}}`,
  (t) => `{"time" : "${iso(t)}" , "user_id" :\t"spaced"}`,
  (t) => JSON.stringify({ time: iso(t), user_id: 'zoë-日本', ip: '203.0.113.4' }),
  (t) => JSON.stringify({ time: iso(t), user_id: 'x'.repeat(15_000), ua: 'y'.repeat(15_000) }),
  (t) => JSON.stringify({ time: iso(t), user_id: 'u1', ua: `${'é'.repeat(5000)}` }),
  (t) => Buffer.concat([Buffer.from(`{"time":"${iso(t)}","user_id":"`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
  (t) => `{"time":"${iso(t)}","ip":"203.0.113.1","user_id":"al`,
  () => 'not json at all',
  () => '[1,2,3]',
  () => JSON.stringify({ ip: '203.0.113.1', user_id: 'alice' }),
  () => JSON.stringify({ time: 'yesterday-ish', user_id: 'alice' }),
  (t) => JSON.stringify({ time: iso(t), user_id: true }),
  (t) => JSON.stringify({ time: iso(t), user_id: null, ip: '203.0.113.8' }),
  (t) => JSON.stringify({ time: iso(t), user_id: '', ip: '2001:db8:aa:bb00::1' }),
  (t) => JSON.stringify({ time: iso(t), ip: 'not-an-ip' }),
  (t) => JSON.stringify({ time: iso(t), ip: '[2001:db8:aa:bbff::9]:443' }),
  (t) => JSON.stringify({ time: iso(t), ip: 'fe80::1%eth0' }),
  (t) => JSON.stringify({ time: iso(t), ip: '203.0.113.1:8080' }),
  (t) => JSON.stringify({ time: t / 1000, user_id: 42 }),
  (t) => `{"time":${t},"user_id":1.50}`,
  (t) => `{"time":"${t}","user_id":1e3}`,
  (t) => `{"time":"${iso(t).replace('T', ' ').replace('Z', '+02:00')}","user_id":"offset"}`,
  (t) => `{"time":"${iso(t)}","user_id":"crlf"}\r`,
  (t) => `{"time":"${iso(t)}","user_id":"trailing"}  \t`,
  (t) => JSON.stringify({ time: iso(t - 30_000), user_id: 'late' }),
  (t) => JSON.stringify({ time: iso(t - 600_000), user_id: 'u1' }),
  (t) => JSON.stringify({ time: iso(t + 90_000), user_id: 'early' }),
  () => '',
];

function log(): Buffer {
  const parts: Array<string | Buffer> = [];
  let i = 0;
  const lines = [...generateLogLines({ lines: 30_000, seed: 11 })].join('').split('\n');
  for (const line of lines) {
    parts.push(line, '\n');
    if (i % 97 === 0) {
      const at = Date.parse(JSON.parse(line).time as string);
      parts.push(AWKWARD[Math.floor(i / 97) % AWKWARD.length]!(at), '\n');
    }
    i++;
    if (i === lines.length - 1) break; // the last piece after the final newline is empty
  }
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

const CANDIDATES = [
  'fixed-window:20/1m',
  'sliding-window-counter:20/1m',
  'gcra:10/1m:burst=5',
  'token-bucket:10/1m:burst=20',
  'sliding-window-log:20/1m',
  'leaky-bucket:10/1m:burst=20',
].map(parseRuleFlag);

const comparable = (r: TuneReport) => ({ ...r, elapsedMs: 0, inputs: [], lines: { ...r.lines, scanned: 0, jsonParsed: 0 } });

it('the field scan and JSON.parse on every line give the same report on a generated log full of awkward lines', async () => {
  const text = log();
  const fast = await tuneText(text, { candidates: CANDIDATES });
  const strict = await tuneText(text, { candidates: CANDIDATES, strict: true });
  expect(fast.lines.scanned).toBeGreaterThan(29_000);
  expect(fast.lines.jsonParsed).toBeGreaterThan(100);
  expect(strict.lines.scanned).toBe(0);
  for (const reason of ['notJson', 'invalidUtf8', 'noTime', 'badTime', 'badUser', 'noIdentity'] as const) {
    expect(fast.lines.skippedByReason[reason], reason).toBeGreaterThan(0);
  }
  expect(fast.order.late).toBeGreaterThan(0);
  expect(comparable(fast)).toEqual(comparable(strict));
}, 60_000);
