// Node only: a watcher's timers are unref'd, so a process whose work is done exits with a watcher still running.
import { expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow } from '../src/index.js';
import { watchConfig } from '../src/config/index.js';
import { MapStore } from './support/map-store.js';
import { MapConfigSource } from './support/map-config-source.js';

test("the refresh timer and a read's deadline timer do not keep the process alive", async () => {
  const intervals = vi.spyOn(globalThis, 'setInterval');
  const timeouts = vi.spyOn(globalThis, 'setTimeout');
  const source = new MapConfigSource(false);
  const limiter = createLimiter({ store: new MapStore(), rules: fixedWindow({ limit: 1, window: '1s' }) });
  const watcher = watchConfig(limiter, source, { refresh: '1s' });
  await watcher.ready;
  const made = [...intervals.mock.results, ...timeouts.mock.results].map((r) => r.value as NodeJS.Timeout);
  expect(made.length).toBeGreaterThanOrEqual(2); // the interval and the first read's deadline
  for (const timer of made) expect(timer.hasRef()).toBe(false);
  await watcher.stop();
  intervals.mockRestore();
  timeouts.mockRestore();
});
