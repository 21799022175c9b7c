// The app's own process (start.mjs forks it): one Node process, one event loop, the one the worker shedder
// watches. Connects to the Redis named by REDIS_URL, serves on a free port of 127.0.0.1, tells the parent the
// port over IPC, and closes everything when the parent says 'stop'.
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { createApp } from './app.mjs';

const redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 });
await once(redis, 'ready');
const { app, close } = createApp(redis);
const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
process.send({ type: 'listening', port: server.address().port });

process.on('message', async (message) => {
  if (message?.type !== 'stop') return;
  close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await redis.quit();
  process.disconnect();
});
