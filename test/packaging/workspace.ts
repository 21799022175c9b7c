// The repository as the packaging tests see it: where it is, and which of its packages are published.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface Manifest {
  name: string;
  exports?: Record<string, unknown>;
  version: string;
  private?: boolean;
  license?: string;
  repository?: { type?: string; url?: string; directory?: string };
  homepage?: string;
  bugs?: { url?: string };
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
}

export const readJson = (file: string): Manifest => JSON.parse(readFileSync(file, 'utf8')) as Manifest;

/** Every publishable (not private) package under packages/, with its directory (absolute). */
export function publishedPackages(): { dir: string; manifest: Manifest }[] {
  const found: { dir: string; manifest: Manifest }[] = [];
  for (const group of ['packages', 'packages/stores', 'packages/frameworks']) {
    const base = join(root, group);
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base)) {
      const dir = join(base, name);
      const file = join(dir, 'package.json');
      if (!existsSync(file)) continue;
      const manifest = readJson(file);
      if (manifest.private !== true) found.push({ dir, manifest });
    }
  }
  return found;
}
