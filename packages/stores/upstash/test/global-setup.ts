import type { TestProject } from 'vitest/node';
import { startUpstashFixture } from '../../../../test/harness/upstash-fixture.js';
import { startRedis } from '../../../../test/harness/redis.js';

declare module 'vitest' {
  export interface ProvidedContext {
    upstashUrl: string;
    upstashToken: string;
  }
}

/** One redis-server and one Upstash REST fixture in front of it, for every test file of both environments. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await startRedis();
  const fixture = await startUpstashFixture({ redisPort: redis.port });
  project.provide('upstashUrl', fixture.url);
  project.provide('upstashToken', fixture.token);
  return async () => {
    await fixture.close();
    await redis.stop();
  };
}
