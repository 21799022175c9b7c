import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh folder under the OS temp dir; `remove()` deletes it and everything in it. */
export function tempFolder(label: string): { path: string; file: (name: string) => string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), `sluice-sqlite-${label}-`));
  return { path, file: (name) => join(path, name), remove: () => rmSync(path, { recursive: true, force: true }) };
}
