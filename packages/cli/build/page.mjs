// Build step for `sluice dashboard`'s page: src/dashboard/page/dashboard.js (the browser script) and dashboard.css
// are read at build time and served to src/dashboard/page.ts as the virtual module `virtual:sluice-dashboard-page`
// (`script` and `style`, as text), which the page inlines under its CSP nonce. The browser script stays a file of its
// own language, linted as browser code (eslint.config.js). tsup (esbuild) loads it through esbuildPagePlugin.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'dashboard', 'page');
export const VIRTUAL_ID = 'virtual:sluice-dashboard-page';

/** The module's source: the two files as string constants; a file that could end its inline element is refused. */
export function pageModule() {
  const script = readFileSync(join(PAGE_DIR, 'dashboard.js'), 'utf8');
  const style = readFileSync(join(PAGE_DIR, 'dashboard.css'), 'utf8');
  if (/<\/script/i.test(script)) throw new Error('dashboard.js must not contain "</script": it is inlined in a <script> element');
  if (/<\/style/i.test(style)) throw new Error('dashboard.css must not contain "</style": it is inlined in a <style> element');
  return `export const script = ${JSON.stringify(script)};\nexport const style = ${JSON.stringify(style)};\n`;
}

/** For tsup's esbuildPlugins. */
export function esbuildPagePlugin() {
  return {
    name: 'sluice-dashboard-page',
    setup(build) {
      build.onResolve({ filter: /^virtual:sluice-dashboard-page$/ }, () => ({ path: VIRTUAL_ID, namespace: 'sluice-dashboard-page' }));
      build.onLoad({ filter: /.*/, namespace: 'sluice-dashboard-page' }, () => ({
        contents: pageModule(),
        loader: 'js',
        watchFiles: [join(PAGE_DIR, 'dashboard.js'), join(PAGE_DIR, 'dashboard.css')],
      }));
    },
  };
}
