import { SluiceError } from '@sluice/core';
import type { DenyListSource } from '@sluice/core/config';
import { describeValue, rejectUnknownOptions } from '@sluice/core/internal';
import { describe, test } from 'vitest';
import { DENY_CHECKS, type DenyCheck } from './deny-source-checks.js';

export interface DenySourceConformanceOptions {
  /** Names the top-level `describe` block: `deny source conformance: <name>`. */
  name: string;
  /**
   * Makes a deny list source on the store under test (`configSource.deny`); may be async. Called once per test, and
   * once more by the test of concurrent changes, whose two sources must reach the same lists: two clients of one
   * server, two connections to one file (a store held in this process answers the same source each time).
   */
  createSource: () => DenyListSource | Promise<DenyListSource>;
  /** Drops every stored part of list `name` directly (its keys, its rows), as a store restarted empty would. */
  lose: (name: string) => void | Promise<void>;
  /** The source pushes changes (`subscribe`): its delivery is tested; `false`: it must have no `subscribe`. */
  push: boolean;
  /** `change` answers `removed`, how many of the matches to remove it held: the count is tested; `false`: it must answer none. */
  countsRemoved: boolean;
  /** Start of each test's list name, `<listPrefix>-<run id>-<n>`, so runs sharing a server never share a list. @default 'deny-conformance' */
  listPrefix?: string;
  /** Each test's deadline in ms (1,100 changes over a REST API take a while). @default 30000 */
  timeoutMs?: number;
}

const RUN = Math.random().toString(36).slice(2, 8).padEnd(6, '0');
let sequence = 0;

/**
 * Registers the deny list structure's conformance suite (vitest `describe`/`test`) for one store: what core's
 * DenyListSource promises (epochs, versions, the log of the last DENY_LOG_LENGTH changes and its texts, pages
 * that give every entry once, a lost list read as none, concurrent writers, pushes), checked on the real store.
 * @example
 * describeDenySourceConformance({
 *   name: 'redis',
 *   createSource: () => redisConfigSource(new Redis(port)).deny,
 *   lose: (name) => void admin.del(...denyKeys('sluice', name)),
 *   push: true,
 *   countsRemoved: true,
 * });
 */
export function describeDenySourceConformance(options: DenySourceConformanceOptions): void {
  const where = 'describeDenySourceConformance';
  if (typeof options !== 'object' || options === null)
    throw new SluiceError('INVALID_OPTION', `${where}: options must be an object, got ${describeValue(options)}`);
  rejectUnknownOptions(options, ['name', 'createSource', 'lose', 'push', 'countsRemoved', 'listPrefix', 'timeoutMs'], where);
  const { name, createSource, lose, push, countsRemoved, listPrefix = 'deny-conformance', timeoutMs = 30_000 } = options;
  if (typeof name !== 'string' || name.length === 0)
    throw new SluiceError('INVALID_OPTION', `${where}: name must be a non-empty string, got ${describeValue(name)}`);
  for (const [field, value] of [
    ['createSource', createSource],
    ['lose', lose],
  ] as const) {
    if (typeof value !== 'function')
      throw new SluiceError('INVALID_OPTION', `${where}: ${field} must be a function, got ${describeValue(value)}`);
  }
  if (typeof push !== 'boolean')
    throw new SluiceError('INVALID_OPTION', `${where}: push must be true (the source has subscribe) or false, got ${describeValue(push)}`);
  if (typeof countsRemoved !== 'boolean')
    throw new SluiceError(
      'INVALID_OPTION',
      `${where}: countsRemoved must be true (change answers removed) or false, got ${describeValue(countsRemoved)}`,
    );
  if (typeof listPrefix !== 'string' || listPrefix.length === 0)
    throw new SluiceError('INVALID_OPTION', `${where}: listPrefix must be a non-empty string, got ${describeValue(listPrefix)}`);
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw new SluiceError('INVALID_OPTION', `${where}: timeoutMs must be a positive whole number of ms, got ${describeValue(timeoutMs)}`);

  describe(`deny source conformance: ${name}`, () => {
    // A check for the other kind of source (push or not, counting or not) is left out rather than skipped: each pair
    // always tests one side, the subscribe that must work or the subscribe that must not be there.
    const applies = (check: DenyCheck) =>
      (check.push === undefined || check.push === push) && (check.countsRemoved === undefined || check.countsRemoved === countsRemoved);
    for (const check of DENY_CHECKS.filter(applies)) {
      test(
        check.title,
        async () => {
          const source = await createSource();
          await check.run({
            source,
            other: async () => createSource(),
            name: `${listPrefix}-${RUN}-${++sequence}`,
            lose: async (list) => lose(list),
          });
        },
        timeoutMs,
      );
    }
  });
}
