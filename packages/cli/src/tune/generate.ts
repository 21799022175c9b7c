/**
 * A generator of realistic access logs, so the tests, the benchmark and the README need nothing downloaded:
 * - users with heavy-tailed activity (Pareto, shape 1.6: most send a handful, a few send tens of times more),
 *   80% on IPv4, 20% on IPv6;
 * - anonymous visitors (15% of the traffic), identified by IP; a third of them on IPv6 privacy addresses that
 *   change with every request inside their /56, which @sluice/http groups into one identity;
 * - three abusers (`abuser-1..3`), each sending 3% of all requests at a steady rate;
 * - a bursty bot (anonymous, 198.51.100.7) quiet but for a 3-second burst every 10 minutes;
 * - the disorder of real logs: 2% of lines up to 300 ms late, a stretch written by a server whose clock is 1.5 s
 *   behind, and 0.01% of lines 5 s late (beyond `tune`'s default 2 s reorder window);
 * - 0.5% of lines with an escaped character in the user agent (JSON), which the field scan hands to JSON.parse.
 * The same options and seed give the same bytes.
 */
import { createWriteStream } from 'node:fs';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { SluiceError } from '@sluice/core';
import { formatClfTime } from './timestamp.js';

export interface GenerateLogsOptions {
  /** Lines to write. */
  lines: number;
  /** @default 'json' */
  format?: 'json' | 'combined';
  /** @default 1 */
  seed?: number;
  /** Distinct signed-in users. @default lines / 100, from 50 to 200,000 */
  users?: number;
  /** Epoch ms of the first line. @default 2024-05-01T00:00:00Z */
  start?: number;
  /** Average requests per second of the whole log. @default 500 */
  ratePerSecond?: number;
}

/** mulberry32: small, fast, and the same sequence on every platform. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Cumulative activity weights of n clients, each drawn from a Pareto distribution (x_min 1, shape `alpha`): most
 * clients near 1, a few tens of times busier. Sampled by binary search.
 */
function paretoWeights(n: number, alpha: number, rand: () => number): Float64Array {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) cdf[i] = sum += Math.pow(1 - rand(), -1 / alpha);
  for (let i = 0; i < n; i++) cdf[i]! /= sum;
  return cdf;
}

function sample(cdf: Float64Array, r: number): number {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cdf[mid]! < r) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function hash(n: number): number {
  let h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const hex = (n: number) => (n & 0xffff).toString(16);

function ipv4(n: number): string {
  const h = hash(n);
  // 1-223 first octet, never 0, 10, 127 or multicast: plain public-looking unicast.
  const a = 11 + (h % 212);
  return `${a === 127 ? 128 : a}.${(h >>> 8) & 255}.${(h >>> 16) & 255}.${1 + ((h >>> 24) % 254)}`;
}

/**
 * The first 56 bits of client n's IPv6 addresses, written as `2001:db8:hhhh:pp` with the fourth group's last two
 * hex digits still to come: what follows varies inside the /56.
 */
function ipv6Prefix(n: number): string {
  const h = hash(n + 7919);
  return `2001:db8:${hex(h)}:${((h >>> 16) & 0xff).toString(16).padStart(2, '0')}`;
}

const PATHS = [
  '/api/v1/items',
  '/api/v1/items/',
  '/api/v1/orders',
  '/api/v1/search?q=',
  '/api/v1/me',
  '/static/app.js',
  '/login',
  '/api/v1/reports/',
];
const AGENTS = [
  'Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0',
  'Mozilla/5.0 (Macintosh) Safari/605.1.15',
  'okhttp/4.12.0',
  'python-requests/2.32.3',
  'curl/8.7.1',
];
const BOT = '198.51.100.7';

function validate(options: GenerateLogsOptions): Required<GenerateLogsOptions> {
  const { lines } = options;
  if (!Number.isSafeInteger(lines) || lines < 0)
    throw new SluiceError('INVALID_OPTION', `generateLogs: lines must be a whole number, 0 or more, got ${lines}`);
  const format = options.format ?? 'json';
  if (format !== 'json' && format !== 'combined')
    throw new SluiceError('INVALID_OPTION', `generateLogs: format must be 'json' or 'combined', got ${JSON.stringify(format)}`);
  const seed = options.seed ?? 1;
  if (!Number.isSafeInteger(seed)) throw new SluiceError('INVALID_OPTION', `generateLogs: seed must be a whole number, got ${seed}`);
  const users = options.users ?? Math.min(200_000, Math.max(50, Math.floor(lines / 100)));
  if (!Number.isSafeInteger(users) || users < 1)
    throw new SluiceError('INVALID_OPTION', `generateLogs: users must be a whole number, at least 1, got ${users}`);
  const start = options.start ?? Date.UTC(2024, 4, 1);
  if (!Number.isSafeInteger(start) || start < 0)
    throw new SluiceError('INVALID_OPTION', `generateLogs: start must be epoch ms, got ${start}`);
  const ratePerSecond = options.ratePerSecond ?? 500;
  if (!(ratePerSecond > 0 && Number.isFinite(ratePerSecond)))
    throw new SluiceError('INVALID_OPTION', `generateLogs: ratePerSecond must be a positive number, got ${ratePerSecond}`);
  return { lines, format, seed, users, start, ratePerSecond };
}

/** The log as batches of whole lines, each ending with a newline. */
export function* generateLogLines(options: GenerateLogsOptions): Generator<string> {
  const o = validate(options);
  const rand = random(o.seed);
  const userCdf = paretoWeights(o.users, 1.6, rand);
  const visitors = Math.max(10, Math.floor(o.users / 2));
  const visitorCdf = paretoWeights(visitors, 1.6, rand);
  const meanGapMs = 1000 / o.ratePerSecond;
  const burstEveryMs = 600_000;
  const skewFrom = Math.floor(o.lines * 0.6);
  const skewTo = Math.floor(o.lines * 0.62);
  let t = o.start;
  let nextBurst = o.start + 120_000;
  let secondPrefix = '';
  let second = -1;
  let batch = '';
  for (let line = 0; line < o.lines; line++) {
    t += -Math.log(1 - rand()) * meanGapMs;
    if (t >= nextBurst + 3000) nextBurst += burstEveryMs;
    const inBurst = t >= nextBurst;
    let user: string | null = null;
    let ip: string;
    const r = rand();
    if (inBurst && rand() < 0.05) {
      ip = BOT;
    } else if (r < 0.09) {
      const k = Math.floor(r / 0.03);
      user = `abuser-${k + 1}`;
      ip = ipv4(1_000_000 + k);
    } else if (r < 0.24) {
      const v = sample(visitorCdf, rand());
      ip =
        v % 3 === 0
          ? `${ipv6Prefix(2_000_000 + v)}${Math.floor(rand() * 256)
              .toString(16)
              .padStart(2, '0')}:${hex(rand() * 65536)}:${hex(rand() * 65536)}:${hex(rand() * 65536)}:${hex(rand() * 65536)}`
          : ipv4(2_000_000 + v);
    } else {
      const u = sample(userCdf, rand());
      user = `u${u + 1}`;
      ip = u % 5 === 0 ? `${ipv6Prefix(u)}00::${hex(u)}` : ipv4(u);
    }
    let time = Math.floor(t);
    const late = rand();
    if (late < 0.02)
      time -= Math.floor(late * 15_000); // up to 300 ms
    else if (late > 0.9999) time -= 5000;
    if (line >= skewFrom && line < skewTo) time -= 1500;
    const status = rand() < 0.03 ? 404 : 200;
    const size = 200 + Math.floor(rand() * 5000);
    const pathIndex = Math.floor(rand() * PATHS.length);
    const path =
      PATHS[pathIndex]!.endsWith('/') || PATHS[pathIndex]!.endsWith('=')
        ? `${PATHS[pathIndex]}${Math.floor(rand() * 10000)}`
        : PATHS[pathIndex]!;
    const escaped = rand() < 0.005;
    const agent = AGENTS[Math.floor(rand() * AGENTS.length)]!;
    if (o.format === 'json') {
      const s = Math.floor(time / 1000);
      if (s !== second) {
        second = s;
        secondPrefix = new Date(s * 1000).toISOString().slice(0, 20);
      }
      const ms = time - s * 1000;
      const iso = `${secondPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
      const userField = user === null ? (line % 2 === 0 ? '' : ',"user_id":null') : `,"user_id":"${user}"`;
      const ua = escaped ? `${agent} \\"beta\\"` : agent;
      batch += `{"time":"${iso}","ip":"${ip}"${userField},"method":"GET","path":"${path}","status":${status},"bytes":${size},"duration_ms":${1 + Math.floor(rand() * 200)},"ua":"${ua}"}\n`;
    } else {
      batch += `${ip} - ${user ?? '-'} [${formatClfTime(time)}] "GET ${path} HTTP/1.1" ${status} ${size} "-" "${agent}"\n`;
    }
    if (batch.length >= 1 << 16) {
      yield batch;
      batch = '';
    }
  }
  if (batch !== '') yield batch;
}

/** Writes a generated log to `output` (a path, or a stream such as process.stdout, left open), gzipped if asked. */
export async function generateLogs(options: GenerateLogsOptions & { output: string | Writable; gzip?: boolean }): Promise<void> {
  validate(options);
  const toFile = typeof options.output === 'string';
  const target = toFile ? createWriteStream(options.output as string) : (options.output as Writable);
  const source = Readable.from(generateLogLines(options), { objectMode: false });
  if (options.gzip) await pipeline(source, createGzip(), target, { end: toFile });
  else await pipeline(source, target, { end: toFile });
}
