import { EdgeVM } from '@edge-runtime/vm';
import { build, type Plugin } from 'esbuild';
import { describe, expect, it } from 'vitest';

// vitest's edge-runtime environment swaps in the edge web globals but keeps Node's Buffer and process, so it
// cannot catch a Node-only API. This test can: it bundles what a middleware ships (@sluice/next from its built
// dist, over @sluice/http, core and the memory store) and runs a request flow in a bare EdgeVM, where Buffer,
// process, require and every node:* module are absent.
//
// `next/server` is bundled the way Next.js's compiler does it for middleware: its barrel file is replaced by the
// two modules we use (Next's SWC `cjsRequireOptimizer` rewrites the import the same way, because the barrel also
// pulls in ImageResponse and ua-parser, which are not edge-safe), and `process.env.NEXT_RUNTIME` is defined as
// "edge". The requests are plain web `Request`s: NextRequest's own URL parsing reads process.env, which Next's
// sandbox provides and a bare EdgeVM does not; @sluice/next reads only headers, method and url.
const nextServer: Plugin = {
  name: 'next-server-as-next-compiles-it',
  setup(bundler) {
    bundler.onResolve({ filter: /^next\/server$/ }, () => ({ path: 'next/server', namespace: 'next-server' }));
    bundler.onLoad({ filter: /.*/, namespace: 'next-server' }, () => ({
      resolveDir: new URL('..', import.meta.url).pathname,
      loader: 'js',
      contents:
        "export { NextRequest } from 'next/dist/server/web/spec-extension/request';\n" +
        "export { NextResponse } from 'next/dist/server/web/spec-extension/response';\n",
    }));
  },
};

const entry = `
import { rateLimit } from '@sluice/next';
import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
globalThis.scenario = async () => {
  const limiter = createLimiter({ store: memoryStore(), name: 'edge', rules: fixedWindow({ limit: 2, window: '1m' }) });
  const shipped = [];
  const limit = rateLimit({ limiter, clientIp: { platform: 'vercel' }, onLimited: async ({ identity }) => { shipped.push(identity); } });
  const handed = [];
  const event = { waitUntil: (promise) => handed.push(promise) };
  const responses = [];
  for (let i = 0; i < 3; i++) {
    const request = new Request('https://app.example/api', { headers: { 'x-vercel-forwarded-for': '2001:db8:1:2::99' } });
    const response = await limit(request, event);
    responses.push({
      status: response.status,
      next: response.headers.get('x-middleware-next'),
      rateLimit: response.headers.get('ratelimit'),
      retryAfter: response.headers.get('retry-after'),
    });
  }
  await Promise.all(handed);
  return { responses, shipped, handed: handed.length };
};`;

describe('edge runtime', () => {
  it('the bundle a middleware ships runs in a bare EdgeVM', async () => {
    const bundle = await build({
      stdin: { contents: entry, resolveDir: new URL('..', import.meta.url).pathname, loader: 'js' },
      bundle: true,
      format: 'iife',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['edge-light', 'worker', 'import'],
      define: { 'process.env.NEXT_RUNTIME': '"edge"' },
      plugins: [nextServer],
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
    expect(vm.evaluate('[typeof Buffer, typeof process, typeof require, typeof EdgeRuntime]')).toEqual([
      'undefined',
      'undefined',
      'undefined',
      'string',
    ]);
    vm.evaluate(bundle.outputFiles[0]!.text);
    const outcome = (await vm.evaluate('scenario()')) as {
      responses: { status: number; next: string | null; rateLimit: string; retryAfter: string | null }[];
      shipped: string[];
      handed: number;
    };
    expect(outcome.responses.map((r) => [r.status, r.next])).toEqual([
      [200, '1'],
      [200, '1'],
      [429, null],
    ]);
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
