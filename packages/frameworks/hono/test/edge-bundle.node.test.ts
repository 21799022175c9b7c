import { EdgeVM } from '@edge-runtime/vm';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

// vitest's edge-runtime environment swaps in the edge web globals but keeps Node's Buffer and process, so it
// cannot catch a Node-only API. This test can: it bundles what a Worker ships (hono and @sluice/hono from its built
// dist, over @sluice/http, core and the memory store) and runs it in a bare EdgeVM, where Buffer, process, require
// and every node:* module are absent, calling `app.fetch(request, env, ctx)` as workerd does, with an
// ExecutionContext that records what was handed to waitUntil.
const entry = `
import { Hono } from 'hono';
import { rateLimit } from '@sluice/hono';
import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
globalThis.scenario = async () => {
  const limiter = createLimiter({ store: memoryStore(), name: 'edge', rules: fixedWindow({ limit: 2, window: '1m' }) });
  const shipped = [];
  const app = new Hono();
  app.use(rateLimit({ limiter, clientIp: { platform: 'cloudflare' }, onLimited: async ({ identity }) => { shipped.push(identity); } }));
  app.get('/api', (c) => c.text(c.get('rateLimit').identity));
  const handed = [];
  const ctx = { waitUntil: (promise) => handed.push(promise), passThroughOnException: () => {} };
  const responses = [];
  for (let i = 0; i < 3; i++) {
    const request = new Request('https://app.example/api', { headers: { 'cf-connecting-ip': '2001:db8:1:2::99' } });
    const response = await app.fetch(request, {}, ctx);
    responses.push({ status: response.status, body: await response.text(), rateLimit: response.headers.get('ratelimit'), retryAfter: response.headers.get('retry-after') });
  }
  await Promise.all(handed);
  return { responses, shipped, handed: handed.length };
};`;

describe('edge runtime', () => {
  it('the bundle a Worker ships runs in a bare EdgeVM', async () => {
    const bundle = await build({
      stdin: { contents: entry, resolveDir: new URL('..', import.meta.url).pathname, loader: 'js' },
      bundle: true,
      format: 'iife',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['workerd', 'worker', 'import'],
      write: false,
      logLevel: 'silent',
      metafile: true,
    });
    // The shipped @sluice packages are the built dist files (this package by self-reference), not the sources.
    const inputs = Object.keys(bundle.metafile.inputs);
    expect(inputs).toEqual(expect.arrayContaining(['dist/index.js', '../../http/dist/index.js', '../../core/dist/index.js']));
    expect(inputs.filter((file) => file.includes('/src/'))).toEqual([]);

    const vm = new EdgeVM();
    // Checked outside the bundle: esbuild rewrites `typeof require` inside it to its own shim.
    expect(vm.evaluate('[typeof Buffer, typeof process, typeof require]')).toEqual(['undefined', 'undefined', 'undefined']);
    vm.evaluate(bundle.outputFiles[0]!.text);
    const outcome = (await vm.evaluate('scenario()')) as {
      responses: { status: number; body: string; rateLimit: string; retryAfter: string | null }[];
      shipped: string[];
      handed: number;
    };
    expect(outcome.responses.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(outcome.responses[0]!.body).toBe('ip:2001:db8:1::/56');
    expect(outcome.responses.map((r) => r.rateLimit)).toEqual([
      expect.stringMatching(/^"edge";r=1;t=\d+$/),
      expect.stringMatching(/^"edge";r=0;t=\d+$/),
      expect.stringMatching(/^"edge";r=0;t=\d+$/),
    ]);
    expect(Number(outcome.responses[2]!.retryAfter)).toBeGreaterThan(0);
    expect(outcome.shipped).toEqual(['ip:2001:db8:1::/56']);
    expect(outcome.handed).toBe(1);
  });
});
