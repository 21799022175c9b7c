/**
 * The differential suites (differential.test.ts, cross-store.test.ts) take their cases from core's ALGORITHM_NAMES
 * through arbitraries.ts: an algorithm core adds without a generator fails here, and every step the Lua dispatches
 * is reached by some case.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALGORITHM_NAMES } from '@sluice/core/store';
import { luaRuleArgument } from '@sluice/redis-script';
import { STEPS } from '../../packages/stores/redis-script/build/lua.mjs';
import { ALGORITHMS, GENERATORS, differentialCases, ruleOf } from './arbitraries.js';

describe('the differential cases are derived from core', () => {
  it('every algorithm core names has a generator, and its rules are of that algorithm', () => {
    for (const name of ALGORITHM_NAMES) {
      const variants = Object.keys(GENERATORS[name] ?? {});
      expect(variants.length, `${name} has no generator in test/harness/arbitraries.ts GENERATORS`).toBeGreaterThan(0);
      for (const variant of variants) {
        expect(ALGORITHMS).toContain(variant);
        for (const rule of fc.sample(ruleOf(variant, 'r'), 20)) expect(rule.algorithm).toBe(name);
      }
    }
    expect(Object.keys(GENERATORS).sort()).toEqual([...ALGORITHM_NAMES].sort());
  });

  it('an algorithm without a generator stops the suites, naming it', () => {
    expect(() => differentialCases([...ALGORITHM_NAMES, 'new-algorithm'], GENERATORS)).toThrow(/"new-algorithm" has no rule generator/);
  });

  it('the cases reach every step the Lua dispatches, and only those', () => {
    const codes = new Set<string>();
    for (const variant of ALGORITHMS) {
      for (const rule of fc.sample(ruleOf(variant, 'r'), 20)) codes.add(luaRuleArgument(rule).split(' ')[0]!);
    }
    expect([...codes].sort()).toEqual(STEPS.map(([code]) => code).sort());
  });
});
