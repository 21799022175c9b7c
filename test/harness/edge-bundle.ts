/**
 * The edge bundle check the edge-safe framework adapters share. vitest's edge-runtime environment swaps in the edge
 * web globals but keeps Node's Buffer and process, so it cannot catch a Node-only API. This can: the adapter's test
 * bundles what an edge deployment ships (the adapter from its built dist, over @sluice/http, core and the memory
 * store) with esbuild, and runs one request flow in a bare EdgeVM, where Buffer, process, require and every node:*
 * module are absent. The flow: a limit of 2 per minute, three requests from one IPv6 client, the third refused, and
 * the onLimited hook's work handed to waitUntil.
 */
import type { BuildOptions, Metafile } from 'esbuild';
import { expect } from 'vitest';

/** The esbuild options every edge bundle shares; the adapter adds its entry (`stdin`), conditions and any plugin. */
export const EDGE_BUNDLE = {
  bundle: true,
  format: 'iife',
  platform: 'neutral',
  mainFields: ['module', 'main'],
  write: false,
  logLevel: 'silent',
  metafile: true,
} as const satisfies BuildOptions;

/** How an adapter answers a request in the flow, as JavaScript source placed in the bundle's entry. */
export interface EdgeFlow {
  /** The import lines of the adapter and its framework. */
  imports: string;
  /**
   * Statements that define `handle(request)`, answering a Response, from `limiter` (the rate limiter), `onLimited`
   * (the hook whose work the platform must be handed) and `waitUntil` (the platform's, recording what it is handed).
   */
  mount: string;
  /** The header the platform sets to the client's address. */
  clientHeader: string;
  /** An expression on `response` (it may await) recorded for each request as `extra`. */
  extra: string;
}

/** What the flow saw, for `expectEdgeFlow`. */
export interface EdgeFlowOutcome {
  responses: { status: number; extra: unknown; rateLimit: string | null; retryAfter: string | null }[];
  shipped: string[];
  handed: number;
}

/** The bundle's entry: `globalThis.scenario()` runs the flow and resolves to its EdgeFlowOutcome. */
export function edgeFlowEntry(flow: EdgeFlow): string {
  return `
import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
${flow.imports}
globalThis.scenario = async () => {
  const limiter = createLimiter({ store: memoryStore(), name: 'edge', rules: fixedWindow({ limit: 2, window: '1m' }) });
  const shipped = [];
  const onLimited = async ({ identity }) => { shipped.push(identity); };
  const handed = [];
  const waitUntil = (promise) => handed.push(promise);
  ${flow.mount}
  const responses = [];
  for (let i = 0; i < 3; i++) {
    const request = new Request('https://app.example/api', { headers: { ${JSON.stringify(flow.clientHeader)}: '2001:db8:1:2::99' } });
    const response = await handle(request);
    responses.push({
      status: response.status,
      extra: await (async () => ${flow.extra})(),
      rateLimit: response.headers.get('ratelimit'),
      retryAfter: response.headers.get('retry-after'),
    });
  }
  await Promise.all(handed);
  return { responses, shipped, handed: handed.length };
};`;
}

/** The shipped @sluice packages are the built dist files (the adapter's own by self-reference), not the sources. */
export function expectBuiltInputs(metafile: Metafile): void {
  const inputs = Object.keys(metafile.inputs);
  expect(inputs).toEqual(expect.arrayContaining(['dist/index.js', '../../http/dist/index.js', '../../core/dist/index.js']));
  expect(inputs.filter((file) => file.includes('/src/'))).toEqual([]);
}

/** Evaluates the bundle in `vm` (a fresh EdgeVM), after checking that it is bare, and runs the flow. */
export async function runInBareEdgeVM(vm: { evaluate: (code: string) => unknown }, bundle: string): Promise<EdgeFlowOutcome> {
  // Checked outside the bundle: esbuild rewrites `typeof require` inside it to its own shim.
  expect(vm.evaluate('[typeof Buffer, typeof process, typeof require, typeof EdgeRuntime]')).toEqual([
    'undefined',
    'undefined',
    'undefined',
    'string',
  ]);
  vm.evaluate(bundle);
  return (await vm.evaluate('scenario()')) as EdgeFlowOutcome;
}

/** Two requests allowed and the third refused, with RateLimit headers, Retry-After, and the hook's work handed over once. */
export function expectEdgeFlow(outcome: EdgeFlowOutcome, extras: unknown[]): void {
  expect(outcome.responses.map((r) => r.status)).toEqual([200, 200, 429]);
  expect(outcome.responses.map((r) => r.extra)).toEqual(extras);
  expect(outcome.responses.map((r) => r.rateLimit)).toEqual([
    expect.stringMatching(/^"edge";r=1;t=\d+$/),
    expect.stringMatching(/^"edge";r=0;t=\d+$/),
    expect.stringMatching(/^"edge";r=0;t=\d+$/),
  ]);
  expect(Number(outcome.responses[2]!.retryAfter)).toBeGreaterThan(0);
  // One IPv6 client, identified by its /56 prefix.
  expect(outcome.shipped).toEqual(['ip:2001:db8:1::/56']);
  expect(outcome.handed).toBe(1);
}
