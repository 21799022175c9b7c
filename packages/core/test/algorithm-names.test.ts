import { describe, expect, it } from 'vitest';
import { ALGORITHM_NAMES } from '../src/store/index.js';
import { STEPS } from '../src/algorithms/rules.js';

describe('ALGORITHM_NAMES', () => {
  it('names exactly the algorithms evaluate() dispatches to, once each', () => {
    expect([...ALGORITHM_NAMES].sort()).toEqual(Object.keys(STEPS).sort());
    expect(new Set(ALGORITHM_NAMES).size).toBe(ALGORITHM_NAMES.length);
  });

  it('is frozen (executors and suites enumerate it; nobody may edit it at run time)', () => {
    expect(Object.isFrozen(ALGORITHM_NAMES)).toBe(true);
  });
});
