import type { Store } from '@sluice/core';
import { describe, it } from 'vitest';
import type { TestContext } from '../context.js';
import { isInstant, runVector } from '../run-vector.js';
import type { Api } from '../tracked-limiter.js';
import { COMPOUND_VECTORS } from '../vectors/compound.js';
import { INSTANT_VECTORS } from '../vectors/instant.js';
import { OVER_TIME_VECTORS } from '../vectors/over-time.js';
import { ARTICLE_VECTORS } from '../vectors/article-examples.js';
import type { Vector } from '../vectors/types.js';

const GROUPS: ReadonlyArray<[string, Vector[]]> = [
  ['every algorithm at one instant', INSTANT_VECTORS],
  ['every algorithm over time (fake clock)', OVER_TIME_VECTORS],
  ['worked examples of the article "Designing a rate limiter" (fake clock)', ARTICLE_VECTORS],
  ['compound rules, all-or-nothing', COMPOUND_VECTORS],
];

/**
 * Registers the concrete vectors. A store-clock store gets the ones that need no control over time (every step at
 * one instant); the rest need the fake clock and are left out, not skipped, as they cannot run there.
 */
export function vectorTests(get: () => TestContext<Store>, clientClock: boolean, api: Api): void {
  for (const [title, vectors] of GROUPS) {
    const runnable = clientClock ? vectors : vectors.filter(isInstant);
    if (runnable.length === 0) continue;
    describe(title, () => {
      for (const vector of runnable) {
        it(vector.title, () => runVector(get(), vector, api));
      }
    });
  }
}
