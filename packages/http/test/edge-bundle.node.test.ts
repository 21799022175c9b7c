import { EdgeVM } from '@edge-runtime/vm';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

// vitest's edge-runtime environment swaps in the edge web globals but keeps Node's Buffer and process, so it
// cannot catch a Node-only API. This test can: it bundles what a Next.js middleware would ship (@sluice/http over
// core and the memory store, from their built dist) and runs a rate-limited request flow inside a bare EdgeVM,
// where Buffer, process, require and every node:* module are absent.
const entry = `
import { createHandler, toResponse } from '@sluice/http';
import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
globalThis.scenario = async () => {
  const limiter = createLimiter({ store: memoryStore(), name: 'edge', rules: fixedWindow({ limit: 2, window: '1m' }) });
  const handler = createHandler({ limiter, clientIp: { platform: 'vercel' } });
  const request = new Request('https://example.test/', { headers: { 'x-vercel-forwarded-for': '2001:db8:1:2::99' } });
  const statuses = [];
  let last;
  for (let i = 0; i < 3; i++) {
    last = await handler.handle({ headers: request.headers, method: request.method, url: request.url }, request);
    statuses.push(last.status);
  }
  const response = toResponse(last);
  return { statuses, identity: last.identity, retryAfter: response.headers.get('retry-after'), body: await response.json() };
};`;

describe('edge runtime', () => {
  it('the bundle a middleware ships runs in a bare EdgeVM', async () => {
    const bundle = await build({
      stdin: { contents: entry, resolveDir: new URL('..', import.meta.url).pathname, loader: 'js' },
      bundle: true,
      format: 'iife',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      write: false,
      logLevel: 'silent',
    });
    const vm = new EdgeVM();
    // Checked outside the bundle: esbuild rewrites `typeof require` inside it to its own shim.
    expect(vm.evaluate('[typeof Buffer, typeof process, typeof require, typeof EdgeRuntime]')).toEqual([
      'undefined',
      'undefined',
      'undefined',
      'string',
    ]);
    vm.evaluate(bundle.outputFiles[0]!.text);
    const outcome = (await vm.evaluate('scenario()')) as Record<string, unknown>;
    expect(outcome.statuses).toEqual([200, 200, 429]);
    expect(outcome.identity).toBe('ip:2001:db8:1::/56');
    expect(Number(outcome.retryAfter)).toBeGreaterThan(0);
    expect((outcome.body as { type: string }).type).toContain('quota-exceeded');
  });
});
