/** Reading a deny list kept in a store's own structure (deny/source.ts) whole, for writers and tools. */
import { checkDenyEntry, type DenyEntry } from '../deny/entries.js';
import type { DenyListSource } from '../deny/source.js';
import { SluiceError } from '../shared/errors.js';

/**
 * Every entry of a structure, read a page at a time, checked: an entry that is not valid goes to `onBad` (or is
 * left out), as instances leave it out. The entries changed during the read may show in either state.
 */
export async function readDenyList(
  deny: DenyListSource,
  name: string,
  onBad?: (error: SluiceError, entry: unknown) => void,
): Promise<Map<string, DenyEntry>> {
  const entries = new Map<string, DenyEntry>();
  let cursor = '0';
  do {
    const page = await deny.readPage(name, cursor, 1000);
    for (const text of page.entries) {
      let value: unknown = text;
      try {
        value = JSON.parse(text);
        const entry = checkDenyEntry(value, 'deny entry');
        entries.set(entry.match, entry);
      } catch (error) {
        onBad?.(
          error instanceof SluiceError ? error : new SluiceError('INVALID_OPTION', `deny entry: not JSON: ${text.slice(0, 80)}`),
          value,
        );
      }
    }
    cursor = page.cursor;
  } while (cursor !== '0');
  return entries;
}
