import { EdgeVM } from '@edge-runtime/vm';
import { build } from 'esbuild';
import { describe, it } from 'vitest';
import { EDGE_BUNDLE, edgeFlowEntry, expectBuiltInputs, expectEdgeFlow, runInBareEdgeVM } from '../../../../test/harness/edge-bundle.js';

// What a Worker ships (hono and @sluice/hono from its built dist), in a bare EdgeVM with no Node API
// (test/harness/edge-bundle.ts), called as workerd does: `app.fetch(request, env, ctx)`, with an ExecutionContext
// that records what was handed to waitUntil.
const entry = edgeFlowEntry({
  imports: "import { Hono } from 'hono';\nimport { rateLimit } from '@sluice/hono';",
  mount: `
  const app = new Hono();
  app.use(rateLimit({ limiter, clientIp: { platform: 'cloudflare' }, onLimited }));
  app.get('/api', (c) => c.text(c.get('rateLimit').identity));
  const ctx = { waitUntil, passThroughOnException: () => {} };
  const handle = (request) => app.fetch(request, {}, ctx);`,
  clientHeader: 'cf-connecting-ip',
  extra: 'response.status === 200 ? await response.text() : null',
});

describe('edge runtime', () => {
  it('the bundle a Worker ships runs in a bare EdgeVM', async () => {
    const bundle = await build({
      ...EDGE_BUNDLE,
      stdin: { contents: entry, resolveDir: new URL('..', import.meta.url).pathname, loader: 'js' },
      conditions: ['workerd', 'worker', 'import'],
    });
    expectBuiltInputs(bundle.metafile);
    const outcome = await runInBareEdgeVM(new EdgeVM(), bundle.outputFiles[0]!.text);
    // The route answers with the identity the middleware resolved: the client's /56.
    expectEdgeFlow(outcome, ['ip:2001:db8:1::/56', 'ip:2001:db8:1::/56', null]);
  });
});
