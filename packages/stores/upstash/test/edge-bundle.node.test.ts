/**
 * vitest's edge-runtime environment swaps in the edge web globals but keeps Node's Buffer and process, so it
 * cannot catch a Node-only API. This test can: it bundles what an edge function would ship (@sluice/upstash and
 * @sluice/core from their built dist, with @upstash/redis) and runs decisions inside a bare EdgeVM, where Buffer,
 * process, require and every node:* module are absent, against the fixture over real HTTP.
 */
import { EdgeVM } from '@edge-runtime/vm';
import { build } from 'esbuild';
import { beforeEach, describe, expect, it } from 'vitest';
import { control, token, url } from './helpers.js';

const entry = `
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { upstashStore } from '@sluice/upstash';
import { Redis } from '@upstash/redis';
globalThis.scenario = async (url, token, identity) => {
  const redis = new Redis({ url, token, enableTelemetry: false });
  const limiter = createLimiter({
    store: upstashStore(redis),
    name: 'edge-vm',
    rules: [fixedWindow({ limit: 2, window: '1m' }), tokenBucket({ capacity: 5, refillRate: 1 })],
  });
  const decisions = [];
  for (let i = 0; i < 3; i++) decisions.push(await limiter.limit(identity));
  return decisions.map((d) => ({ allowed: d.allowed, remaining: d.remaining, degraded: d.degraded, rule: d.rule }));
};`;

beforeEach(() => control.reset());

describe('a bare EdgeVM', () => {
  it('runs the bundle an edge function ships, one request per decision', async () => {
    const bundle = await build({
      stdin: { contents: entry, resolveDir: new URL('..', import.meta.url).pathname, loader: 'js' },
      bundle: true,
      format: 'iife',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['edge-light', 'worker', 'import'],
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
    const identity = `edge-vm-${crypto.randomUUID()}`;
    // The first decision on a fresh script cache may cost EVALSHA + EVAL: warm it, then count.
    await vm.evaluate(`scenario(${JSON.stringify(url)}, ${JSON.stringify(token)}, 'warmup')`);
    await control.reset();
    const decisions = await vm.evaluate(`scenario(${JSON.stringify(url)}, ${JSON.stringify(token)}, ${JSON.stringify(identity)})`);
    expect(decisions).toEqual([
      { allowed: true, remaining: 1, degraded: false, rule: 'fw:60000' },
      { allowed: true, remaining: 0, degraded: false, rule: 'fw:60000' },
      { allowed: false, remaining: 0, degraded: false, rule: 'fw:60000' },
    ]);
    expect((await control.stats()).requests).toBe(3);
  });
});
