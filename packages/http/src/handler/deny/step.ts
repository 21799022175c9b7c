/**
 * The deny list step's slot in the handler. The matcher itself (deny-check.ts, deny-list.ts) is only reached
 * through `matchDenyList`, given as the `denyList` option, so a worker that does not use a deny list does not
 * ship it. Without the option, a limiter that holds a list is reported once per list: its entries are not
 * enforced, and the operator who added them must hear so.
 */
import { SluiceError } from '@sluice/core';
import type { CompiledOptions } from '../types.js';
import { report } from '../report.js';

/** `needs` answers: no list applies; lists of identities only; some list holds IP blocks (resolve the address). */
export const DENY_NONE = 0;
export const DENY_IDENTITY = 1;
export const DENY_ADDRESS = 2;

/**
 * `needs` for a handler without the `denyList` option: nothing to do, but a limiter holding a non-empty list is
 * reported to onError (or the console) once per list (a core limiter's lineage: a list set whole, not each change
 * of some entries; else the list object), since its entries go unenforced on this handler.
 */
export function unenforcedDenyList<R>(o: CompiledOptions<R>, raw: R): number {
  for (let i = 0; i < o.entries.length; i++) {
    const entry = o.entries[i]!;
    const limiter = entry.limiter;
    // A list switched off (its deny mode) is not enforced on purpose: reported once it is switched on.
    if (limiter.denyMode === 'off') continue;
    const lineage = limiter.denyLineage;
    const source = lineage ?? limiter.deny;
    if (source === undefined || entry.denySource === source) continue;
    const size = lineage === undefined ? limiter.deny.length : lineage.size;
    if (size === 0) continue;
    entry.denySource = source;
    const error = new SluiceError(
      'INVALID_OPTION',
      `limiter "${entry.name}" has a deny list of ${size} entries, but this handler does not enforce it: ` +
        `pass denyList: matchDenyList (from @sluice/http or the adapter) to refuse those clients with 403`,
    );
    report(o, error, { request: raw, source: 'deny-list', limiterName: entry.name }, entry.store);
  }
  return DENY_NONE;
}
