// Child process (run with --expose-gc): how much heap @sluice/http's compiled deny list holds for 100,000
// entries, beyond the list itself (core's frozen copy, set before the baseline): the first request of a handler
// compiles the matcher, which the handler keeps. Then times the requests while a replacement of that list is
// compiled in parts, and the request after each change of one entry. Prints one JSON line (see lib/child.mjs).
//   node --expose-gc bench/suites/http-deny/heap.mjs [entries]
import { createLimiter, fixedWindow } from '@sluice/core';
import { liveDenyList } from '@sluice/core/config';
import { createHandler, matchDenyList } from '@sluice/http';
import { memoryStore } from '@sluice/memory';
import { reply } from '../../lib/child.mjs';
import { denyEntries } from './entries.mjs';

const count = Number(process.argv[2] ?? 100_000);
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const collect = () => {
  globalThis.gc();
  globalThis.gc();
};

const limiter = createLimiter({ store: memoryStore(), rules: fixedWindow({ limit: 1_000_000, window: '1m' }) });
limiter.configure({ deny: liveDenyList(denyEntries(count)) }); // core keeps a checked, frozen copy: the list itself, outside the measure
// A first handler (IPv6 grouped by /64) compiles the list once: what core and the first request leave behind
// (some of it freed only then) is settled before the baseline, so the measure holds one matcher and nothing else.
createHandler({ limiter, denyList: matchDenyList, clientIp: { ipv6Prefix: 64 } }).run({ headers: {}, remoteAddress: '10.0.0.0' });
const handler = createHandler({ limiter, denyList: matchDenyList }); // IPv6 grouped by /56: a matcher of its own
collect();
const before = process.memoryUsage().heapUsed;
const started = process.hrtime.bigint();
const first = handler.run({ headers: {}, remoteAddress: '10.0.0.0' }); // compiles the matcher (and is denied: entry 0)
const compileMs = Number(process.hrtime.bigint() - started) / 1e6;
collect();
const matcherBytes = process.memoryUsage().heapUsed - before;

// The list replaced by one more entry (as `createAutoDeny` or `sluice config deny add` replaces it): compiled a part per
// request while the replaced list applies. Requests are timed until the new entry is denied (no timer turn runs in
// this loop: only the requests compile).
limiter.configure({ deny: liveDenyList([...denyEntries(count), { match: '192.0.2.1' }]) });
const during = [];
for (let denied = false; !denied;) {
  const t = process.hrtime.bigint();
  denied = handler.run({ headers: {}, remoteAddress: '192.0.2.1' }).status === 403;
  during.push(Number(process.hrtime.bigint() - t) / 1e6);
}
during.sort((a, b) => a - b);
const replaced = { requests: during.length, medianMs: during[during.length >> 1], longestMs: during.at(-1) };

// The list changed an entry at a time (`the change() of a live deny list`, as watchConfig applies each change in the
// store): the matcher takes the change in place, so the next request already applies it. Each change adds an
// address and removes the one added before; the request from the added address is timed, and must be denied. The
// configure call (core's new list) is timed apart: it is not the request's.
const CHANGES = 100;
const applied = [];
const configured = [];
for (let i = 0; i < CHANGES; i++) {
  const c = process.hrtime.bigint();
  limiter.denyLineage.change({ add: [{ match: `198.51.100.${i}` }], remove: i === 0 ? [] : [`198.51.100.${i - 1}`] });
  const t = process.hrtime.bigint();
  const status = handler.run({ headers: {}, remoteAddress: `198.51.100.${i}` }).status;
  applied.push(Number(process.hrtime.bigint() - t) / 1e6);
  configured.push(Number(t - c) / 1e6);
  if (status !== 403) throw new Error(`the request after change ${i} got ${status}, not 403: the change was not applied`);
}
applied.sort((a, b) => a - b);
configured.sort((a, b) => a - b);
const changed = {
  changes: CHANGES,
  medianMs: applied[CHANGES >> 1],
  longestMs: applied.at(-1),
  configureMedianMs: configured[CHANGES >> 1],
};
reply({ entries: count, firstRequestStatus: first.status, compileMs: Math.round(compileMs), matcherBytes, replaced, changed });
