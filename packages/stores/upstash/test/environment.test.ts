import { expect, it } from 'vitest';

it('runs in the environment its project names (edge-runtime really provides the edge globals)', ({ task }) => {
  const edge = typeof (globalThis as { EdgeRuntime?: unknown }).EdgeRuntime === 'string';
  expect(edge).toBe(task.file.projectName === 'edge-runtime');
});
