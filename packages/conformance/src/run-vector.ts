import type { Store } from '@sluice/core';
import type { TestContext } from './context.js';
import { expectDecision } from './expect-decision.js';
import type { Api } from './tracked-limiter.js';
import { label } from './tracked-limiter.js';
import type { Vector } from './vectors/types.js';

/** True when every step happens at the same clock reading, so the vector needs no control over time. */
export function isInstant(vector: Vector): boolean {
  return vector.steps.every((step) => step.at === vector.steps[0]!.at);
}

/** Plays a vector step by step on the store under test, checking each decision as written and against the model. */
export async function runVector(context: TestContext<Store>, vector: Vector, api: Api): Promise<void> {
  const limiter = context.limiter({ rules: vector.rules() }, api);
  for (const [index, step] of vector.steps.entries()) {
    if (context.clientClock) context.at(step.at);
    const identity = step.identity ?? 'alice';
    const op = step.op ?? 'limit';
    const what = `${vector.title}, step ${index + 1} at ${step.at}: ${op}(${label(identity)}${step.cost === undefined ? '' : `, cost ${step.cost}`})`;
    if (op === 'reset') {
      await limiter.reset(identity);
      continue;
    }
    const decision = await limiter[op](identity, step.cost);
    if (step.expect !== undefined) expectDecision(decision, step.expect, context.clientClock, what);
  }
}
