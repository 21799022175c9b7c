// The built entry, as a Next.js app imports it, run under both environments (the edge project gives it the
// edge runtime's globals). Catches a build that differs from the source the other tests run.
import { fixedWindow } from '@sluice/core';
import { expect, it } from 'vitest';
import * as built from '../dist/index.js';
import { fakeClock, fetchEvent, memoryLimiter, nextRequest } from './support.js';

it('dist/index.js decides, answers and hands background work over', async () => {
  expect(Object.keys(built).sort()).toEqual(['matchDenyList', 'rateLimit', 'toNextResponse', 'withRateLimitHeaders', 'withTrafficStack']);
  const limiter = memoryLimiter({ name: 'built', clock: fakeClock().read, rules: fixedWindow({ limit: 1, window: '10s' }) });
  const limited: string[] = [];
  const limit = built.rateLimit({
    limiter,
    clientIp: { platform: 'vercel' },
    onLimited: async ({ identity }) => void limited.push(identity),
  });
  const event = fetchEvent();
  const statuses: number[] = [];
  for (let i = 0; i < 2; i++) statuses.push((await limit(nextRequest({ 'x-vercel-forwarded-for': '203.0.113.9' }), event)).status);
  await Promise.all(event.handed);
  expect(statuses).toEqual([200, 429]);
  expect(limited).toEqual(['ip:203.0.113.9']);
});
