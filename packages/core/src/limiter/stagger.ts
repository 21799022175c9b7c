/**
 * Staggered fixed windows: a rule with `stagger` starts each identity's windows at an offset of its own (a hash of
 * the identity), so the identities of a fleet do not all get their limit back at the same instant.
 */
import { hash32 } from '../shared/identity.js';
import type { ResolvedRule, Rule } from '../algorithms/rules.js';

export function hasStagger(rules: readonly Rule[]): boolean {
  for (let i = 0; i < rules.length; i++) if (rules[i]!.stagger) return true;
  return false;
}

export function stagger(rules: readonly Rule[], identity: string): readonly ResolvedRule[] {
  return rules.map((r) => (r.stagger ? staggered(r, identity) : r));
}

function staggered(rule: Rule, identity: string): ResolvedRule {
  const params = rule.params as { limit: number; windowMs: number; offsetMs: number };
  return { ...rule, params: { ...params, offsetMs: hash32(identity) % params.windowMs } } as ResolvedRule;
}
