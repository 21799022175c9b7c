/** Reads the fenced code blocks the README marks with `<!-- name -->` comments, so tests run what users read. */
export function fencedBlockAfter(markdown: string, marker: string): string | undefined {
  return fencedBlockAfterLine(markdown, `<!-- ${marker} -->`);
}

/** The first fenced code block after the line that reads exactly `marker` (e.g. a heading), without its fences. */
export function fencedBlockAfterLine(markdown: string, marker: string): string | undefined {
  const lines = markdown.split(/\r?\n/);
  const at = lines.findIndex((line) => line.trim() === marker);
  if (at < 0) return undefined;
  let open = at + 1;
  while (open < lines.length && lines[open]!.trim() === '') open++;
  const fence = /^(`{3,}|~{3,})/.exec(lines[open] ?? '');
  if (fence === null) throw new Error(`README: ${marker} must be followed by a fenced code block`);
  const close = lines.findIndex((line, i) => i > open && line.trim() === fence[1]);
  if (close < 0) throw new Error(`README: the code block after ${marker} is not closed`);
  return lines.slice(open + 1, close).join('\n') + '\n';
}

/**
 * Turns the ESM quickstart into CommonJS: named imports become destructured requires, and the body runs inside an
 * async function because top-level await is ESM-only. Anything else that is ESM-only is refused, so the README
 * either stays within this subset or provides its own `<!-- quickstart-cjs -->` block.
 */
export function toCommonJs(esm: string): string {
  const body = esm.replace(
    /^import\s+\{([^}]+)\}\s+from\s+(['"][^'"]+['"]);?[ \t]*$/gm,
    (_line, names: string, specifier: string) => `const {${names.replace(/\s+as\s+/g, ': ')}} = require(${specifier});`,
  );
  if (/^\s*(import|export)\b/m.test(body) || body.includes('import.meta')) {
    throw new Error('the quickstart uses ESM syntax the CJS transform does not handle; add a <!-- quickstart-cjs --> block');
  }
  return `'use strict';\n(async () => {\n${body}})().catch((error) => {\n  console.error(error);\n  process.exitCode = 1;\n});\n`;
}
