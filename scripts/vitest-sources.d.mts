// Types of scripts/vitest-sources.mjs, for the vitest configs that import it.
export const FROM_SOURCES: boolean;
export const READS_THE_BUILD: RegExp;
export function sourceEntries(): Map<string, string>;
export function withSourceMode<T extends object>(config: T, options?: { fullOnly?: string[] }): T;
