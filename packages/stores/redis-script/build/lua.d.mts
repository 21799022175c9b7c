// Types of build/lua.mjs, for the tests that import it.
export interface LineOrigin {
  /** The .lua file, relative to the Lua directory (`steps/gcra.lua`). */
  file: string;
  /** Its 1-based line. */
  line: number;
}
type Texts<T> = { script: T; library: T; lease: T; config: T; analytics: T; analyticsRead: T; denyChange: T; denyRead: T };
export interface Assembled {
  script: string;
  sha1: string;
  functionName: string;
  library: string;
  /** src/lua/lease.lua assembled: the concurrency-lease script. */
  lease: string;
  leaseSha1: string;
  config: string;
  analytics: string;
  analyticsRead: string;
  /** src/lua/deny-change.lua assembled: one change to a deny list. */
  denyChange: string;
  /** src/lua/deny-read.lua assembled: a deny list's changes and pages. */
  denyRead: string;
  /** Where each line of a text (shipped or readable: they have the same lines) came from. */
  maps: Texts<LineOrigin[]>;
  /** Each text compacted, with its locals as the files name them: what luacheck lints. */
  readable: Texts<string>;
  /** Each text's renamed locals and their short names (the script and the library share theirs). */
  names: Texts<Record<string, string>>;
}
export const LUA_DIR: string;
export const VIRTUAL_ID: string;
export const STEPS: [code: string, file: string][];
export function assemble(dir?: string): Assembled;
export function virtualModule(dir?: string): string;
export function compact<T extends { text: string; file: string; line: number }>(lines: T[]): T[];
export function compactText(source: string): string;
export function shortNames<T extends { text: string; file: string; line: number }>(texts: T[][]): Map<string, string>;
export function renameLocals<T extends { text: string; file: string; line: number }>(lines: T[], names: Map<string, string>): T[];
export function esbuildLuaPlugin(): unknown;
export function viteLuaPlugin(): unknown;
