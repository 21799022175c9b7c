/** jsonStringBytes, which sizes Upstash request bodies a key at a time, against encoding the JSON for real. */
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { jsonStringBytes } from '../src/index.js';

const bytes = (text: string) => new TextEncoder().encode(JSON.stringify(text)).length;

test('is the UTF-8 length of JSON.stringify for escapes, control characters, CJK, emoji and lone surrogates', () => {
  for (const text of [
    '',
    'plain:key',
    '"\\',
    '\u0000\u0001\u001f\b\t\n\f\r',
    '\u007f\u0080',
    '漢字',
    '🦀',
    '\ud800',
    'a\udc00b',
    '\u2028',
  ]) {
    expect(jsonStringBytes(text), JSON.stringify(text)).toBe(bytes(text));
  }
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (text) => jsonStringBytes(text) === bytes(text)),
    { numRuns: 2000 },
  );
});
