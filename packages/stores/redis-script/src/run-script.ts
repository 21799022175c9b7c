/**
 * Running the script by its SHA-1 with one fallback to its text, shared by `@sluice/redis` (ioredis) and
 * `@sluice/upstash` (REST). A fresh, restarted or SCRIPT FLUSHed server answers EVALSHA with NOSCRIPT: the script
 * did not run, so exactly one EVAL cannot count a decision twice, and it caches the script for the next EVALSHA.
 * Any other error may or may not have run it: never retried here, the limiters' failure policies decide.
 */

/** The two ways a store sends the script's call (its keys and arguments), in its client's own commands. */
export interface ScriptCommands {
  /** EVALSHA: by the script's SHA-1. */
  evalsha(keys: string[], args: string[]): Promise<unknown>;
  /** EVAL: by the script's text (which also loads it into the server's script cache). */
  eval(keys: string[], args: string[]): Promise<unknown>;
}

/** EVALSHA, and on NOSCRIPT one EVAL of the same call. */
export async function runScript(commands: ScriptCommands, keys: string[], args: string[]): Promise<unknown> {
  try {
    return await commands.evalsha(keys, args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return commands.eval(keys, args);
  }
}

/**
 * Whether an error is the server's NOSCRIPT reply, in each client's wording: ioredis's ReplyError carries the
 * reply itself (`NOSCRIPT No matching script. Please use EVAL.`); @upstash/redis appends the command to it
 * (`NOSCRIPT ..., command was: [...]`) or, auto-pipelined, prefixes it (`Command failed: NOSCRIPT ...`). The code
 * must lead the reply: a script error that merely mentions NOSCRIPT is not a miss, and retrying it could count twice.
 */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && NOSCRIPT.test(error.message);
}

const NOSCRIPT = /^(?:Command failed: )?NOSCRIPT\b/;
