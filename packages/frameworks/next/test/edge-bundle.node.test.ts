import { EdgeVM } from '@edge-runtime/vm';
import { build, type Plugin } from 'esbuild';
import { describe, it } from 'vitest';
import { EDGE_BUNDLE, edgeFlowEntry, expectBuiltInputs, expectEdgeFlow, runInBareEdgeVM } from '../../../../test/harness/edge-bundle.js';

// What a middleware ships (@sluice/next from its built dist), in a bare EdgeVM with no Node API
// (test/harness/edge-bundle.ts).
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

const entry = edgeFlowEntry({
  imports: "import { rateLimit } from '@sluice/next';",
  mount: `
  const limit = rateLimit({ limiter, clientIp: { platform: 'vercel' }, onLimited });
  const handle = (request) => limit(request, { waitUntil });`,
  clientHeader: 'x-vercel-forwarded-for',
  extra: "response.headers.get('x-middleware-next')",
});

describe('edge runtime', () => {
  it('the bundle a middleware ships runs in a bare EdgeVM', async () => {
    const bundle = await build({
      ...EDGE_BUNDLE,
      stdin: { contents: entry, resolveDir: new URL('..', import.meta.url).pathname, loader: 'js' },
      conditions: ['edge-light', 'worker', 'import'],
      define: { 'process.env.NEXT_RUNTIME': '"edge"' },
      plugins: [nextServer],
    });
    expectBuiltInputs(bundle.metafile);
    const outcome = await runInBareEdgeVM(new EdgeVM(), bundle.outputFiles[0]!.text);
    // An allowed request passes on to the route (NextResponse.next()); the refusal does not.
    expectEdgeFlow(outcome, ['1', '1', null]);
  });
});
