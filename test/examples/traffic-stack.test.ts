// examples/traffic-stack: its start command starts a redis-server and the app (the whole trafficStack) in a process
// of its own, overloads it, and prints what each priority class got. Runs `node start.mjs`, the command `pnpm start`
// ends with (the packages it imports are built before this suite runs, which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { portIsClosed, requireRedisBinaries } from '../harness/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/traffic-stack');
const chartPath = join(exampleDir, 'traffic-stack.svg');
const TIMEOUT_MS = 40_000;
const CLASSES = ['critical', 'write', 'read', 'test'] as const;

/**
 * A well-formedness check of the SVG as XML (no parser among the suites' dependencies): one root element, every
 * tag closed in order, attributes quoted once each, no raw '<' or stray '&' in text or attribute values.
 */
function parseXml(text: string): { root: string; elements: Map<string, number> } {
  const entity = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g;
  const clean = (value: string, where: string): void => {
    if (/[<&]/.test(value.replace(entity, ''))) throw new Error(`unescaped '<' or '&' in ${where}: ${value.slice(0, 80)}`);
  };
  const stack: string[] = [];
  const elements = new Map<string, number>();
  let root: string | undefined;
  let at = 0;
  const body = text.replace(/^<\?xml[^?]*\?>\s*/, '');
  for (const m of body.matchAll(/<([^>]*)>/g)) {
    const between = body.slice(at, m.index);
    if (stack.length === 0 && between.trim() !== '') throw new Error(`text outside the root element: ${between.trim().slice(0, 80)}`);
    clean(between, 'text');
    at = m.index + m[0].length;
    const inner = m[1]!;
    if (inner.startsWith('!--')) {
      if (!inner.endsWith('--')) throw new Error('unterminated comment');
      continue;
    }
    if (inner.startsWith('/')) {
      const name = inner.slice(1).trim();
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open ?? 'nothing'}>`);
      continue;
    }
    const tag = /^([A-Za-z_][\w.:-]*)((?:\s+[A-Za-z_][\w.:-]*="[^"]*")*)\s*(\/?)$/.exec(inner);
    if (tag === null) throw new Error(`malformed tag <${inner.slice(0, 80)}>`);
    const [, name, attributes, selfClosing] = tag;
    const names = [...attributes!.matchAll(/([A-Za-z_][\w.:-]*)="([^"]*)"/g)].map(([, attribute, value]) => {
      clean(value!, `${name}'s ${attribute}`);
      return attribute;
    });
    if (new Set(names).size !== names.length) throw new Error(`<${name}> repeats an attribute`);
    if (stack.length === 0) {
      if (root !== undefined) throw new Error(`a second root element <${name}>`);
      root = name;
    }
    elements.set(name!, (elements.get(name!) ?? 0) + 1);
    if (selfClosing === '') stack.push(name!);
  }
  if (body.slice(at).trim() !== '') throw new Error('text after the root element');
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('>, <')}>`);
  if (root === undefined) throw new Error('no root element');
  return { root, elements };
}

it('pnpm start: the whole stack on Redis under an overload; critical survives, test is shed; a chart; exits 0', async () => {
  requireRedisBinaries();
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);
  rmSync(chartPath, { force: true });

  const started = Date.now();
  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: TIMEOUT_MS });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);
  expect(out).toContain('everything behaved as the README says');
  expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
  // Concurrency and fleet hold their leases in Redis, and all of them were given back.
  expect(out).toMatch(/^ {2}concurrency\s+429\s+6 in flight per API key \(Redis leases\)$/m);
  expect(out).toMatch(/^ {2}fleet\s+503\s+.*\(Redis leases\)$/m);
  expect(out).toMatch(/^leases left in Redis after the run: 0 \(lease keys: 0\)$/m);

  // The per-class table of the whole run: every request answered by the handler or by one named layer.
  const whole = new Map<string, { sent: number; ok: number; rate: number; concurrency: number; fleet: number; worker: number }>();
  for (const m of out.matchAll(
    /^ {2}(critical|write|read|test|loop-script|batch-script)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%$/gm,
  )) {
    const [sent, ok, rate, concurrency, fleet, worker, other] = m.slice(2, 9).map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    expect(other, m[0]).toBe(0);
    expect(ok + rate + concurrency + fleet + worker, m[0]).toBe(sent);
    whole.set(m[1]!, { sent, ok, rate, concurrency, fleet, worker });
  }
  expect([...whole.keys()]).toEqual([...CLASSES, 'loop-script', 'batch-script']);
  // The regular clients stay within their rate: only the scripts gone wrong are limited, each by its own layer.
  for (const cls of CLASSES) expect(whole.get(cls)!.rate, cls).toBe(0);
  // 30/s for 15.5 s on one key against bursts of 20 and 10/s: about 290 refused; measured 291 in every run.
  expect(whole.get('loop-script')!.rate).toBeGreaterThan(200);
  // 10 at once with 6 slots per key: measured 38 to 59 refusals over a run.
  expect(whole.get('batch-script')!.concurrency).toBeGreaterThan(10);

  // Per phase: everything admitted before the overload; during it critical passes and test is shed.
  const phase = new Map<string, { sent: number; ok: number; limited: number; shed: number }>();
  for (const m of out.matchAll(
    /^ {2}(before|overload|after)\s+(critical|write|read|test)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%\s+(\d+|-)\s+(\d+|-)$/gm,
  )) {
    const [sent, ok, limited, shed] = m.slice(3, 7).map(Number) as [number, number, number, number];
    expect(ok + limited + shed, m[0]).toBe(sent);
    phase.set(`${m[1]} ${m[2]}`, { sent, ok, limited, shed });
  }
  expect(phase.size).toBe(12);
  for (const cls of CLASSES) {
    const before = phase.get(`before ${cls}`)!;
    expect(before.sent, cls).toBeGreaterThan(0);
    expect(before.ok, `before the overload, ${cls}`).toBe(before.sent);
  }
  const share = (cls: string): number => phase.get(`overload ${cls}`)!.ok / phase.get(`overload ${cls}`)!.sent;
  const testDuring = phase.get('overload test')!;
  // Measured over runs on a shared 2-core machine: critical 100% admitted, test 11% to 19% (300 to 320 of 360 shed).
  expect(testDuring.shed).toBeGreaterThan(testDuring.sent / 2);
  expect(share('critical')).toBeGreaterThanOrEqual(0.85);
  expect(share('test')).toBeLessThanOrEqual(0.5);
  expect(share('critical') - share('test')).toBeGreaterThanOrEqual(0.4);
  // The classes between are shed in the order of the article 'Scaling your API with rate limiters': test most,
  // then read, then write.
  expect(share('read')).toBeLessThanOrEqual(share('write'));
  expect(out).toMatch(/^during the overload: critical \d+% admitted, write \d+%, read \d+%, test \d+% \(\d+ test requests shed\)$/m);
  const amounts = /^worker shedding amount: (-?[\d.]+) when the overload began, peak (-?[\d.]+), /m.exec(out);
  expect(Number(amounts?.[1])).toBeLessThan(0); // at rest before the overload
  expect(Number(amounts?.[2])).toBeGreaterThan(1 / 3); // past shedding all test traffic

  // The chart: written, well-formed, an SVG with the bars and the shedding line in it.
  expect(out).toContain(`chart: ${chartPath}`);
  expect(statSync(chartPath).mtimeMs).toBeGreaterThanOrEqual(started);
  const svg = readFileSync(chartPath, 'utf8');
  const parsed = parseXml(svg);
  expect(parsed.root).toBe('svg');
  expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" /);
  expect(parsed.elements.get('rect')).toBeGreaterThan(100);
  expect(parsed.elements.get('polyline')).toBe(1);
  for (const cls of CLASSES) expect(svg).toContain(`>${cls}</text>`);

  // The redis-server it started is gone.
  const redisPort = Number(/redis-server \S+ on 127\.0\.0\.1:(\d+) \(started by this script\)/.exec(out)?.[1]);
  expect(redisPort).toBeGreaterThan(0);
  expect(await portIsClosed(redisPort)).toBe(true);
  const appPort = Number(/Express app in its own process \(pid \d+\) on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
  expect(appPort).toBeGreaterThan(0);
  expect(await portIsClosed(appPort)).toBe(true);
}, 60_000);
