// Types of build/lua.mjs, for the tests that import it.
export interface LineOrigin {
  /** The .lua file, relative to the Lua directory (`steps/gcra.lua`). */
  file: string;
  /** Its 1-based line. */
  line: number;
}
export interface Assembled {
  script: string;
  sha1: string;
  functionName: string;
  library: string;
  /** src/lua/lease.lua assembled: the concurrency-lease script. */
  lease: string;
  leaseSha1: string;
  maps: { script: LineOrigin[]; library: LineOrigin[]; lease: LineOrigin[] };
}
export const LUA_DIR: string;
export const VIRTUAL_ID: string;
export const STEPS: [code: string, file: string][];
export function assemble(dir?: string): Assembled;
export function virtualModule(dir?: string): string;
export function compact<T extends { text: string; file: string; line: number }>(lines: T[]): T[];
export function compactText(source: string): string;
export function esbuildLuaPlugin(): unknown;
export function viteLuaPlugin(): unknown;
