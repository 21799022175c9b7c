/**
 * The Upstash REST fixture as a process of its own, for code outside the test runner (examples/upstash-fetch,
 * `pnpm bench upstash`): starts a throwaway redis-server and the fixture in front of it, prints one JSON line
 * `{ "url", "token", "redisPort" }` on stdout, and stops both when its stdin closes (the parent exited or
 * closed the pipe) or on SIGTERM/SIGINT. Run it with a TypeScript loader: `node --import tsx <this file>`.
 */
import { startRedis } from './redis.js';
import { startUpstashFixture } from './upstash-fixture.js';

const redis = await startRedis();
const fixture = await startUpstashFixture({ redisPort: redis.port });
process.stdout.write(`${JSON.stringify({ url: fixture.url, token: fixture.token, redisPort: redis.port })}\n`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await fixture.close();
  await redis.stop();
  process.exit(0);
}

process.stdin.on('end', () => void stop());
process.stdin.on('close', () => void stop());
process.stdin.resume();
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
