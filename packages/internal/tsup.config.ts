import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Options } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

const coreSource = resolve(dirname(fileURLToPath(import.meta.url)), '../core/src');

// The helpers throw SluiceError. Compiled from core's source, they would carry a second SluiceError class, and an
// error they throw would fail `instanceof SluiceError` for a user who imports the class from @sluice/core. So core's
// errors.ts is never compiled in: the helpers import the class from @sluice/core itself (errors.ts must stay a
// module whose every export the root also exports, which is why `describe` lives in describe.ts).
const sluiceErrorFromCore: NonNullable<Options['esbuildPlugins']>[number] = {
  name: 'sluice-error-from-core',
  setup(build) {
    build.onResolve({ filter: /^\.\/errors\.js$/ }, (args) =>
      resolve(args.resolveDir) === coreSource ? { path: '@sluice/core', external: true } : undefined,
    );
  },
};

export default defineConfig(library({ esbuildPlugins: [sluiceErrorFromCore] }));
