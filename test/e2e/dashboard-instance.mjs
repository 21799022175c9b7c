// One instance of the fleet the dashboard's browser test watches: its own ioredis client, a limiter named 'api' on a
// redisStore, createFleetAnalytics publishing to redisAnalyticsStore, and watchConfig on redisConfigSource (pub/sub). On
// 'start' it decides steadily over a few identities (one of them far over the limit) and counts every decision by
// the second createFleetAnalytics files it under (the decision's own time) and by the outcome the decision reports. It judges nothing: the parent asks ('state') for its
// mode and deny list, and on 'stop' it publishes everything (analytics.stop()) and answers with its counts.
// It also serves HTTP on 127.0.0.1 through @sluice/http's handler on the same limiter, deny list enforced, the
// client being the user its x-user header names: the parent's requests are what a client of that process sees.
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { createFleetAnalytics } from '@sluice/core/analytics';
import { watchConfig } from '@sluice/core/config';
import { createHandler, matchDenyList } from '@sluice/http';
import { redisAnalyticsStore, redisConfigSource, redisStore } from '@sluice/redis';

const [port] = process.argv.slice(2);
const IDENTITIES = ['mallory', 'alice', 'mallory', 'bob', 'mallory', 'carol'];
const OUTCOMES = ['allowed', 'limited', 'shadowLimited', 'shed', 'degraded'];
const DECISIONS_PER_SECOND = 150;

const client = new Redis({ host: '127.0.0.1', port: Number(port) });
client.on('error', () => {});
let pinned;
const analytics = createFleetAnalytics({ store: redisAnalyticsStore(client), now: () => pinned ?? Date.now() });
/** second -> counts per outcome, in OUTCOMES order. */
const counts = new Map();
const limiter = createLimiter({
  store: redisStore(client),
  rules: fixedWindow({ limit: 10, window: '1s' }),
  name: 'api',
  onDecision: (event) => {
    // Filed under the decision's own time, as createFleetAnalytics files it (its clock is pinned to the same instant, for
    // a version of it that reads its clock instead).
    const { decision } = event;
    pinned = decision.now;
    const outcome = decision.degraded ? 4 : decision.allowed ? (decision.reason === 'shadow' ? 2 : 0) : 1;
    const second = Math.floor(decision.now / 1000);
    const row = counts.get(second) ?? [0, 0, 0, 0, 0];
    row[outcome]++;
    counts.set(second, row);
    analytics.onDecision(event);
    pinned = undefined;
  },
});
const watcher = watchConfig(limiter, redisConfigSource(client), { refresh: '1s' });

const handler = createHandler({ limiter, denyList: matchDenyList, identify: (request) => request.headers['x-user'] });
const http = createServer((req, res) => {
  handler.handle({ headers: req.headers, remoteAddress: req.socket.remoteAddress }).then(
    (result) => {
      res.statusCode = result.allowed ? 200 : result.status;
      res.end(result.body ?? 'ok');
    },
    () => {
      res.statusCode = 500;
      res.end();
    },
  );
});
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));

let running = false;
let loop;
let errors = 0;
let unhandled = 0;
process.on('unhandledRejection', () => void unhandled++);

async function load() {
  const started = Date.now();
  let made = 0;
  while (running) {
    try {
      await limiter.limit(IDENTITIES[made % IDENTITIES.length]);
    } catch {
      errors++;
    }
    made++;
    const due = ((Date.now() - started) * DECISIONS_PER_SECOND) / 1000;
    if (made > due) await new Promise((resolve) => setTimeout(resolve, (made - due) * (1000 / DECISIONS_PER_SECOND)));
  }
}

process.on('message', async (message) => {
  if (message.type === 'start') {
    running = true;
    loop = load();
  } else if (message.type === 'state') {
    process.send({ type: 'state', mode: limiter.mode, deny: limiter.deny.map((entry) => entry.match) });
  } else if (message.type === 'stop') {
    running = false;
    await loop;
    await analytics.stop();
    await watcher.stop();
    await new Promise((resolve) => http.close(resolve));
    process.send({
      type: 'stopped',
      outcomes: OUTCOMES,
      counts: [...counts].map(([second, row]) => [second, ...row]),
      errors,
      unhandled,
      dropped: analytics.stats(),
    });
    client.disconnect();
    process.disconnect();
  }
});

await watcher.ready;
process.send({ type: 'ready', httpPort: http.address().port });
