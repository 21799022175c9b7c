import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { tune, type TuneOptions } from '../src/index.js';

const folder = mkdtempSync(join(tmpdir(), 'sluice-cli-test-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let files = 0;

/** Writes `content` to a fresh temporary file and returns its path. */
export function tempFile(content: string | Uint8Array, extension = '.log'): string {
  const path = join(folder, `input-${files++}${extension}`);
  writeFileSync(path, content);
  return path;
}

/** Runs tune over `content` written to a file. */
export function tuneText(content: string | Uint8Array, options: Omit<TuneOptions, 'inputs'> = {}) {
  return tune({ ...options, inputs: [tempFile(content)] });
}

export const LOG_START = Date.UTC(2024, 4, 1);

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
