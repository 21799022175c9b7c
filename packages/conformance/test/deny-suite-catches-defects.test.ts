/**
 * A deny source suite that passes everything proves nothing. Each check of the suite runs here against a source
 * written to the contract (test/fixtures/mutant-deny-source.ts), which must pass every one, and against the same
 * source with one defect switched on, which must fail the checks written to catch it.
 */
import { describe, expect, test } from 'vitest';
import { DENY_CHECKS, type DenyCheck } from '../src/deny-source-checks.js';
import { mutantDenySource, type DenyDefect } from './fixtures/mutant-deny-source.js';

/** Defect → titles (substrings) of the checks that must fail because of it. */
const MUST_FAIL: Record<Exclude<DenyDefect, 'none'>, string[]> = {
  'log-never-trimmed': ['the log keeps the last 1024 changes'],
  'log-trimmed-short': ['the log keeps the last 1024 changes'],
  'epoch-ignored': ['answers no changes for another epoch'],
  'ahead-answered': ['answers no changes for another epoch'],
  'add-before-remove': ['a change applies clear, then remove, then add'],
  'clear-after-add': ['a change applies clear, then remove, then add'],
  'pages-overlap': ['readPage over 5,000 entries gives each exactly once'],
  'pages-skip': ['readPage over 5,000 entries gives each exactly once'],
  'epoch-kept-after-loss': ['a list the store lost reads as none'],
  'text-unstamped': ['the first change creates the list', 'readChanges answers the texts after a version'],
  'version-read-apart': ['changes from two sources at once each get a version of their own'],
  'unicode-escaped': ['come back byte for byte'],
  'counts-missing-removes': ['how many of the matches to remove were held'],
  'pushes-unstamped': ['subscribe delivers each change as its stamped text'],
  'keeps-listening': ['a listener unsubscribed hears no more'],
  'expiry-ignored': ['expireBefore drops ended entries'],
  'expiry-unbounded': ['expireBefore drops ended entries'],
};

const applicable = DENY_CHECKS.filter((check) => check.push !== false && check.countsRemoved !== false);

async function run(check: DenyCheck, defect: DenyDefect): Promise<void> {
  const source = mutantDenySource(defect);
  await check.run({ source, other: async () => source, name: `list-${defect}`, lose: async (name) => source.lose(name) });
}

describe('the deny source suite passes a source written to the contract', () => {
  for (const check of applicable) test(check.title, () => run(check, 'none'), 30_000);
});

describe('the deny source suite catches each defect', () => {
  for (const [defect, titles] of Object.entries(MUST_FAIL) as Array<[DenyDefect, string[]]>) {
    test(`${defect}: fails ${titles.join('; ')}`, async () => {
      for (const title of titles) {
        const checks = applicable.filter((check) => check.title.includes(title));
        expect(checks, `no check is titled with "${title}"`).toHaveLength(1);
        await expect(run(checks[0]!, defect), `${defect} passed "${title}"`).rejects.toThrow();
      }
    }, 30_000);
  }
});
