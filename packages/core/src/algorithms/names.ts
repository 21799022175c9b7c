import type { AlgorithmName } from './rules.js';

/**
 * Every algorithm core implements, keyed so that the compiler rejects a list that misses or invents one: adding an
 * algorithm to `ParamsByAlgorithm` does not compile until it is named here. Executors and their tests enumerate
 * this list (the JS-vs-Lua differential suite derives its cases from it), so a new algorithm cannot skip them.
 */
const NAMED: { readonly [A in AlgorithmName]: true } = {
  'fixed-window': true,
  'sliding-window-log': true,
  'sliding-window-counter': true,
  'token-bucket': true,
  'leaky-bucket': true,
  gcra: true,
};

/** The name (`ResolvedRule['algorithm']`) of every algorithm core implements. */
export const ALGORITHM_NAMES: readonly AlgorithmName[] = Object.freeze(Object.keys(NAMED) as AlgorithmName[]);
