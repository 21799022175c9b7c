/**
 * The NOSCRIPT replies of a real redis-server as both ioredis majors deliver them, through the one check both
 * Redis-protocol stores share (@sluice/redis-script's isNoScript): a miss is recognised, and a script's own error
 * that mentions NOSCRIPT is not (retrying that could count a decision twice). The @upstash/redis wordings are
 * checked in packages/stores/upstash/test/upstash-redis-client.node.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isNoScript } from '@sluice/redis-script';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { MAJORS } from './ioredis-majors.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(MAJORS)("ioredis $major: isNoScript on the server's replies", ({ connect }) => {
  test('EVALSHA of a script the server does not hold is a miss; EVAL of the same call then runs', async () => {
    const client = connect(server.port);
    try {
      await client.script('FLUSH');
      const sha = (await client.script('LOAD', 'return 7')) as string;
      await client.script('FLUSH');
      const error: unknown = await client.evalsha(sha, 0).catch((e: unknown) => e);
      expect(String(error)).toMatch(/^ReplyError: NOSCRIPT /);
      expect(isNoScript(error)).toBe(true);
      expect(await client.eval('return 7', 0)).toBe(7);
    } finally {
      client.disconnect();
    }
  });

  test('an error raised by a script, even one naming NOSCRIPT, is not a miss', async () => {
    const client = connect(server.port);
    try {
      const error: unknown = await client.eval("error('NOSCRIPT in a message')", 0).catch((e: unknown) => e);
      expect(String(error)).toMatch(/NOSCRIPT in a message/);
      expect(isNoScript(error)).toBe(false);
    } finally {
      client.disconnect();
    }
  });
});
