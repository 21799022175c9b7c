import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';
const map = { '@sluice/core': 'packages/core/src/index.ts', '@sluice/hono': 'packages/frameworks/hono/src/index.ts', '@sluice/http': 'packages/http/src/index.ts', '@sluice/upstash': 'packages/stores/upstash/src/index.ts', '@sluice/internal':'packages/internal/src/index.ts' };
const plugin = { name: 'src', setup(b) { b.onResolve({ filter: /^@sluice\/(core|hono|http|upstash|internal)$/ }, (a) => ({ path: '/work/main/' + map[a.path] })); } };
const r = await build({ entryPoints: [process.argv[2] ?? '/work/main/bench/suites/bundles/hono-upstash.mjs'], bundle: true, minify: true, format: 'esm', platform: 'browser', target: 'es2022', conditions: ['workerd','worker','browser'], metafile: true, write: false, logLevel: 'silent', plugins: [plugin], nodePaths: ['/work/main/bench/node_modules'] });
const [out] = Object.values(r.metafile.outputs);
console.log('gz', gzipSync(r.outputFiles[0].contents, { level: 9 }).length);
for (const [k, v] of Object.entries(out.inputs).sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput).slice(0, 45)) console.log(v.bytesInOutput, k.replace(/.*packages\//, ''));
