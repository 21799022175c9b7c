/**
 * Bytes a string takes in a JSON text sent as UTF-8 (a REST request body), quotes and escapes included: its
 * `JSON.stringify` (which escapes control characters and lone surrogates in ASCII) measured in UTF-8. One string
 * at a time, so a call's size grows by what each key and argument adds, never by encoding the whole call again.
 */
const web = globalThis as unknown as { TextEncoder: new () => { encode(text: string): { length: number } } };

export function jsonStringBytes(text: string): number {
  const json = JSON.stringify(text);
  // ASCII (keys of ids and digits, every argument) is one byte a character: nothing to encode.
  return /^[\0-\x7f]*$/.test(json) ? json.length : new web.TextEncoder().encode(json).length;
}
