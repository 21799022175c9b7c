// Lint config. Besides style, it enforces edge safety by machine: the packages that must run on edge runtimes
// (core, http, memory, redis-script, upstash, tiered, otel, next) may not import Node built-ins nor touch Buffer or a bare `process`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const EDGE_SAFE = [
  'packages/core/src/**/*.ts',
  'packages/http/src/**/*.ts',
  'packages/stores/memory/src/**/*.ts',
  'packages/stores/redis-script/src/**/*.ts',
  'packages/stores/upstash/src/**/*.ts',
  'packages/tiered/src/**/*.ts',
  'packages/otel/src/**/*.ts',
  'packages/frameworks/next/src/**/*.ts',
  'packages/frameworks/hono/src/**/*.ts',
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.next/**', '**/.turbo/**', 'bench/results/**', '**/next-env.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        globalThis: 'readonly',
        fetch: 'readonly',
        Response: 'readonly',
        Request: 'readonly',
        Headers: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        AbortController: 'readonly',
        queueMicrotask: 'readonly',
        structuredClone: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: EDGE_SAFE,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          // Bare built-in names are listed as exact paths: a gitignore-style pattern 'http' would also match '@sluice/http'.
          paths: [
            'fs',
            'fs/promises',
            'path',
            'crypto',
            'http',
            'https',
            'http2',
            'net',
            'tls',
            'dns',
            'os',
            'stream',
            'buffer',
            'events',
            'child_process',
            'worker_threads',
            'util',
            'zlib',
            'url',
            'module',
            'async_hooks',
            'perf_hooks',
            'vm',
          ].map((name) => ({ name, message: 'Edge-safe packages may not import Node built-ins.' })),
          patterns: [{ group: ['node:*'], message: 'Edge-safe packages may not import Node built-ins.' }],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'Buffer', message: 'Edge-safe packages may not use Buffer; use Uint8Array and TextEncoder.' },
        { name: 'process', message: 'Edge-safe packages may not read a bare process; take configuration as options.' },
        { name: 'require', message: 'Edge-safe packages are ESM only.' },
        { name: '__dirname', message: 'Not available on edge runtimes.' },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // CommonJS scripts: the module wrapper's names.
    files: ['**/*.cjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', __filename: 'readonly' } },
  },
  {
    // The dashboard's page script (packages/cli/build/page.mjs inlines it in the page): a classic script in a browser.
    files: ['packages/cli/src/dashboard/page/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        location: 'readonly',
        history: 'readonly',
        localStorage: 'readonly',
        FormData: 'readonly',
        URLSearchParams: 'readonly',
      },
    },
  },
);
