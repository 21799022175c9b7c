// A small public API: a store is made by its factory. Each store class is exported as a type only, so
// `store: MemoryStore` annotations keep working while `new MemoryStore()` and `instanceof` are not part of the API,
// in both builds a user loads (the published ESM and CJS, resolved as a user's code resolves them).
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

const STORES = [
  { name: '@sluice/memory', factory: 'memoryStore', type: 'MemoryStore' },
  { name: '@sluice/sqlite', factory: 'sqliteStore', type: 'SqliteStore' },
  { name: '@sluice/redis', factory: 'redisStore', type: 'RedisStore' },
  { name: '@sluice/upstash', factory: 'upstashStore', type: 'UpstashStore' },
  { name: '@sluice/tiered', factory: 'tieredStore', type: 'TieredStore' },
  { name: '@sluice/conformance', factory: 'referenceStore', type: 'ReferenceStore' },
];

describe('store classes are types only, factories are values', () => {
  for (const { name, factory, type } of STORES) {
    it.each(['import', 'require'])(`${name} exports ${factory} and not ${type} (%s)`, async (how) => {
      const module = (how === 'import' ? await import(name) : require(name)) as Record<string, unknown>;
      expect(typeof module[factory]).toBe('function');
      expect(Object.keys(module)).not.toContain(type);
    });
  }
});
