/**
 * The part of better-sqlite3's `Database` the store uses, written structurally so that the published types do
 * not require `@types/better-sqlite3`. A better-sqlite3 `Database` satisfies it (a type test pins that).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- mirrors better-sqlite3's own typing of transaction()
type AnyFunction = (...params: any[]) => unknown;
type ArgumentsOf<F extends AnyFunction> = F extends (...args: infer A) => unknown ? A : never;

export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  raw(toggle?: boolean): this;
  safeIntegers(toggle?: boolean): this;
}

export interface SqliteDatabase {
  readonly name: string;
  readonly open: boolean;
  readonly readonly: boolean;
  readonly memory: boolean;
  readonly inTransaction: boolean;
  prepare(source: string): SqliteStatement;
  exec(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<F extends AnyFunction>(fn: F): SqliteTransaction<F>;
}

export interface SqliteTransaction<F extends AnyFunction> {
  (...args: ArgumentsOf<F>): ReturnType<F>;
  deferred(...args: ArgumentsOf<F>): ReturnType<F>;
  immediate(...args: ArgumentsOf<F>): ReturnType<F>;
  exclusive(...args: ArgumentsOf<F>): ReturnType<F>;
}
