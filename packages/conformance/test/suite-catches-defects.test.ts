import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEEDS_OPERATION } from '../src/groups/operations.js';

/**
 * A conformance suite that passes everything proves nothing. This runs the suite (through a nested vitest) against
 * the reference logic with one defect at a time switched on (test/fixtures/mutant-store.ts) and requires that each
 * defect fails the tests written to catch it, while the defect-free stores, one with a client clock and one async
 * with its own clock, pass every test.
 */

interface Assertion {
  ancestorTitles: string[];
  title: string;
  status: string;
}

/** Defect → titles (substrings) of tests that must fail because of it. */
const MUST_FAIL: Record<string, string[]> = {
  'not-all-or-nothing': [
    'compound: 2 per second and 3 per minute',
    'answers a raw request atomically',
    'resets every rule of a compound limiter',
  ],
  'peek-writes': ['peeks, cost 0 and costs that can never fit create no state'],
  'never-expires': ['state lives exactly until resetAt', 'kept until its longest-lived rule expires'],
  'expires-early': ['state lives exactly until resetAt', 'GCRA: 3 per millisecond'],
  'ignores-prefix': ['the same limiter name under different prefixes keeps separate state'],
  'drops-remainder': ['GCRA: 3 per millisecond keeps sub-millisecond remainders'],
  'reset-ignores-rule-ids': ['reset forgets only the rule ids of the limiter that asks'],
  'truncates-keys': ['long identities are accepted, kept apart'],
  'ascii-keys': ['any Unicode identity gets its own state'],
  'not-atomic': ['in flight admit exactly 5 each'],
  'reports-wrong-time': ['worked example: sliding window log', 'answers a raw request atomically'],
  'take-all-or-nothing': ['take: a fixed window of 5 per minute grants what is left', 'take: compound rules grant the same number'],
  'reserve-ignores-queue': ['reserve: a token bucket of 2 (1 per second) books 1 s apart'],
  'claims-store-key-expiry': ['state is stored and outlives the fake resetAt', 'the identity is kept while its longest-lived rule counts'],
};

const here = dirname(fileURLToPath(import.meta.url));
let results: Assertion[] = [];
let workDir = '';

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'sluice-conformance-'));
  const output = join(workDir, 'report.json');
  const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      [vitest, 'run', '--config', join(here, 'fixtures', 'vitest.config.ts'), '--reporter=json', `--outputFile=${output}`],
      { cwd: join(here, '..'), timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      // The nested run fails by design (the mutants); only a missing report is an error here.
      (error) => {
        try {
          const report = JSON.parse(readFileSync(output, 'utf8')) as { testResults: Array<{ assertionResults: Assertion[] }> };
          results = report.testResults.flatMap((file) => file.assertionResults);
          resolve();
        } catch (cause) {
          reject(new Error(`the nested vitest run left no report: ${String(error ?? cause)}`, { cause }));
        }
      },
    );
  });
}, 150_000);

afterAll(() => {
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

/**
 * One suite's tests. The mutants do not run concurrency leases (a store capability apart from the defects they
 * carry), so the leases group's vectors are left out here, after checking that each was reported as skipped.
 */
function suite(name: string): Assertion[] {
  const all = results.filter((a) => a.ancestorTitles[0]?.startsWith(`store conformance: ${name} (`));
  const leases = all.filter((a) => a.title.endsWith(LEASES_SKIPPED));
  for (const a of leases) expect([path(a), a.status]).toEqual([expect.any(String), 'skipped']);
  return all.filter((a) => !a.title.endsWith(LEASES_SKIPPED));
}

const LEASES_SKIPPED = '(skipped: the store does not support leases)';

const path = (a: Assertion): string => [...a.ancestorTitles.slice(1), a.title].join(' > ');

function failed(assertions: Assertion[]): string[] {
  return assertions.filter((a) => a.status !== 'passed').map(path);
}

describe('the conformance suite catches broken stores', () => {
  it('passes the defect-free reference logic: synchronous with a client clock, async with its own clock', () => {
    const client = suite('mutant none');
    const store = suite('mutant none, async');
    expect(client.length).toBeGreaterThan(90);
    expect(store.length).toBeGreaterThan(50);
    expect(failed(client)).toEqual([]);
    expect(failed(store)).toEqual([]);
    // Without leases, the group's vectors are reported as skipped and the refusal of the store is checked (it passed above).
    const leaseSkips = results.filter(
      (a) => a.ancestorTitles[0]?.startsWith('store conformance: mutant none (') && a.title.endsWith(LEASES_SKIPPED),
    );
    expect(leaseSkips.length).toBe(5);
  });

  describe('checks that need key inspection are skipped and reported, never passed unchecked', () => {
    for (const [withKeys, without] of [
      ['mutant none', 'mutant none, no inspectKeys'],
      ['mutant none, async', 'mutant none, async, no inspectKeys'],
    ] as const) {
      it(`${without}: exactly the tests that read keys are skipped, and they ran and passed with inspectKeys`, () => {
        const skipped = suite(without).filter((a) => a.status !== 'passed');
        expect(skipped.length).toBeGreaterThanOrEqual(5);
        for (const a of skipped) expect([path(a), a.status]).toEqual([expect.stringMatching(/\(needs inspectKeys\)$/), 'skipped']);
        const ranWithKeys = suite(withKeys).filter((a) => a.title.endsWith('(needs inspectKeys)'));
        expect(ranWithKeys.map(path).sort()).toEqual(skipped.map(path).sort());
        expect(ranWithKeys.every((a) => a.status === 'passed')).toBe(true);
        expect(suite(without).length).toBe(suite(withKeys).length);
      });
    }

    it('a store without take and reserve has exactly the take and reserve vectors skipped (reported), and its refusal checked', () => {
      const without = suite('mutant none, without take and reserve');
      const skipped = without.filter((a) => a.status !== 'passed');
      expect(skipped.length).toBeGreaterThanOrEqual(6);
      for (const a of skipped)
        expect([path(a), a.status]).toEqual([expect.stringMatching(/\(skipped: the store does not support (take|reserve)\)$/), 'skipped']);
      const refusals = without.filter((a) => a.title.includes('refuses it with UNSUPPORTED_OPERATION'));
      expect(refusals.map((a) => a.status)).toEqual(['passed', 'passed']);
      const ran = suite('mutant none').filter((a) => a.ancestorTitles.some((t) => /^the (take|reserve) operation$/.test(t)));
      expect(
        ran.map((a) => `${path(a)} ${NEEDS_OPERATION(a.ancestorTitles.includes('the take operation') ? 'take' : 'reserve')}`).sort(),
      ).toEqual(skipped.map(path).sort());
      expect(ran.every((a) => a.status === 'passed')).toBe(true);
    });

    it('store-clock expiry fails a key listing that is slow and finds nothing (no assertion skipped for a slow machine)', () => {
      const expiry = suite('mutant slow blind listing, async').filter((a) => a.ancestorTitles.includes('expiry'));
      expect(expiry.length).toBeGreaterThan(0);
      expect(failed(expiry).length, 'a listing that never sees the state must fail the expiry group').toBeGreaterThan(0);
    });
  });

  for (const [defect, titles] of Object.entries(MUST_FAIL)) {
    it(`fails a store that ${defect.replace(/-/g, ' ')}`, () => {
      const assertions = suite(`mutant ${defect}`);
      expect(assertions.length, `no results for mutant ${defect}`).toBeGreaterThan(50);
      const failures = failed(assertions);
      for (const title of titles) {
        expect(
          failures.some((f) => f.includes(title)),
          `expected a failure in "${title}"; failures were:\n${failures.join('\n')}`,
        ).toBe(true);
      }
    });
  }
});
