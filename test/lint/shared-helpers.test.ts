// Option checks, value descriptions, duration parsing, the promise check and the runtime's timers are written once,
// in core's source: the checks in packages/core/src/shared/validate.ts (rejectUnknownOptions, optionNames,
// optionalFunction, nameOption, modeOption, clockOption, timerDuration, priorityClasses and the rest), describeValue,
// durationOption, isPromiseLike, and the timers in shared/timers.ts (timers, unref, MAX_TIMER_MS), which the other
// packages import from `@sluice/core/internal`; and the NOSCRIPT fallback once, in @sluice/redis-script (runScript,
// isNoScript). Every package uses them: this fails when a package's source grows its own copy, so the messages a
// user reads and the behaviour they rely on stay the same everywhere.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the one copy of each lives. */
const HOME = new Set([
  'packages/core/src/shared/validate.ts',
  'packages/core/src/shared/describe.ts',
  'packages/core/src/shared/duration.ts',
  'packages/core/src/shared/promise.ts',
  'packages/core/src/shared/timers.ts',
  'packages/stores/redis-script/src/run-script.ts',
]);

const VALIDATE = 'packages/core/src/shared/validate.ts';
const TIMERS = 'packages/core/src/shared/timers.ts';

/** The sources, but `home`, whose text matches `pattern`. */
const copiesOf = (pattern: RegExp, home?: string) => files.filter((f) => f.path !== home && pattern.test(f.text)).map((f) => f.path);

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'test') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (path.endsWith('.ts') && path.includes(`${'/src/'}`)) out.push(path);
  }
  return out;
}

const files = sources(join(root, 'packages')).map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }));

describe('shared option helpers', () => {
  it("finds the packages' sources", () => {
    expect(files.some((f) => f.path === 'packages/http/src/handler/compile-options.ts')).toBe(true);
  });

  it('no package writes its own unknown-option loop: they call rejectUnknownOptions', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /unknown (\w+ )?option \$\{/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package keeps its own copy of describe: they call describeValue', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /'an array'|"an array"/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package checks for a promise its own way: they call isPromiseLike', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /then\?: unknown|\.then === 'function'/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package writes its own callback-option check: they call optionalFunction', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /must be a function \$\{/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package parses durations its own way: they call durationOption (or parseDuration)', () => {
    const own = files
      .filter((f) => !HOME.has(f.path) && /\(ms\|s\|m\|h\|d\)|must be an integer number of ms|number of ms from/.test(f.text))
      .map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no store detects NOSCRIPT its own way: they call runScript', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /NOSCRIPT\\b|startsWith\('NOSCRIPT/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('the name check is written once: no other name pattern, no function of its own (they call nameOption)', () => {
    expect(
      copiesOf(/A-Za-z0-9_\.-\]\{1,64\}|1 to 64 characters of letters, digits, '_', '\.' or '-'|function checkName\b/, VALIDATE),
    ).toEqual([]);
  });

  it("the mode check is written once, and the modes' union once (LimiterMode): they call modeOption", () => {
    expect(copiesOf(/must be '?enforce'?, '?shadow'? or '?off/, VALIDATE)).toEqual([]);
    expect(
      copiesOf(/'enforce' \| 'shadow' \| 'off'|\['enforce', 'shadow', 'off'\]/, 'packages/core/src/shared/types.ts').filter(
        (path) => path !== VALIDATE,
      ),
    ).toEqual([]);
  });

  it('the clock option is checked once: they call clockOption', () => {
    expect(copiesOf(/'(returning epoch ms|\(\) => epoch ms)'/, VALIDATE)).toEqual([]);
  });

  it("a timer's duration range is written once: they call timerDuration (or use MAX_TIMER_MS)", () => {
    expect(copiesOf(/(max: |= )(2_147_483_647|2147483647|2 \*\* 31 - 1)\b/, TIMERS)).toEqual([]);
  });

  it("the shedders' priority classes are checked once: they call priorityClasses and unknownPriorityClass", () => {
    expect(copiesOf(/must be distinct non-empty strings|unknown priority class/, VALIDATE)).toEqual([]);
  });

  it("the runtime's timers are read from globalThis once (timers), and unref'd once (unref)", () => {
    expect(copiesOf(/globalThis as unknown as \{[^}]*\b(setTimeout|setInterval|clearTimeout|clearInterval)\b/, TIMERS)).toEqual([]);
    expect(copiesOf(/\.unref\?\.\(\)|typeof \w+\.unref === 'function'/, TIMERS)).toEqual([]);
    expect(copiesOf(/function (withTimeout|unref)\b/, TIMERS)).toEqual([]);
  });

  it('option-name lists are written as optionNames<XOptions>({ ... }), which fails to compile when they drift from the interface', () => {
    expect(copiesOf(/const KNOWN(: readonly string\[\])? = \[/)).toEqual([]);
  });
});
