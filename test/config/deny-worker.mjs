// One instance of a fleet behind the deny-list proofs: its own ioredis client, a limiter named 'api' on a redisStore
// (a memory store as the fallback while Redis is away), watchConfig on redisConfigSource (pub/sub, refresh 1 s), and
// an HTTP server on 127.0.0.1 through @sluice/http's handler on that limiter with the deny list enforced, the client
// being the user its x-user header names. It judges nothing: the parent sends requests to its port and asks
// ('state') for what the limiter holds, the watcher's warnings and the onDenied events.
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { watchConfig } from '@sluice/core/config';
import { createHandler, matchDenyList } from '@sluice/http';
import { memoryStore } from '@sluice/memory';
import { redisConfigSource, redisStore } from '@sluice/redis';

const [port] = process.argv.slice(2);
const client = new Redis({ host: '127.0.0.1', port: Number(port) });
client.on('error', () => {}); // the store killed and restarted: reconnect errors are expected, the records show the rest

const limiter = createLimiter({
  store: redisStore(client),
  rules: fixedWindow({ limit: 1000, window: '1s' }),
  name: 'api',
  onStoreError: memoryStore(),
});
const warnings = [];
const watcher = watchConfig(limiter, redisConfigSource(client), {
  refresh: '1s',
  onWarning: (warning) => warnings.push({ code: warning.code, message: warning.message, at: Date.now() }),
});
const denied = [];
const errors = [];
let unhandled = 0;
process.on('unhandledRejection', () => void unhandled++);

const handler = createHandler({
  limiter,
  denyList: matchDenyList,
  identify: (request) => request.headers['x-user'],
  onDenied: (event) => void denied.push({ identity: event.identity, shadow: event.shadow, reason: event.entry.reason }),
  onError: (error, event) => void (event.source !== 'store' && errors.push(String(error))),
});
const http = createServer((req, res) => {
  handler.handle({ headers: req.headers, remoteAddress: req.socket.remoteAddress }).then(
    (result) => {
      res.statusCode = result.allowed ? 200 : result.status;
      res.end(result.allowed ? 'ok' : (result.body ?? ''));
    },
    (error) => {
      errors.push(String(error));
      res.statusCode = 500;
      res.end();
    },
  );
});
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));

process.on('message', async (message) => {
  if (message.type === 'state') {
    process.send({
      type: 'state',
      mode: limiter.mode,
      denyMode: limiter.denyMode,
      deny: limiter.deny.map((entry) => entry.match),
      revision: watcher.config?.revision ?? null,
      warnings,
      denied,
      errors,
      unhandled,
    });
  } else if (message.type === 'stop') {
    await watcher.stop();
    await new Promise((resolve) => http.close(resolve));
    client.disconnect();
    process.disconnect();
  }
});

await watcher.ready;
process.send({ type: 'ready', httpPort: http.address().port });
