/**
 * A deny list's structure (core's DenyListSource) on a Redis-protocol server, for the config sources of @sluice/redis
 * and @sluice/upstash: four keys per list, written by one script per change and read by one script per read.
 * - `${prefix}:deny:{${name}}`: the entries, a HASH of entry texts by match;
 * - `${prefix}:deny:{${name}}:meta`: where the list is, a HASH of `epoch` and `version`;
 * - `${prefix}:deny:{${name}}:log`: the last DENY_LOG_LENGTH change texts, a LIST, newest first;
 * - `${prefix}:deny:{${name}}:expiry`: when entries end, a ZSET of the matches of entries with an `until`, scored by it,
 *   so a change's `expireBefore` finds ended entries without reading the list.
 * The four share the hash tag `{name}`, so on a Cluster they live in one slot and each script runs on one node.
 * A change is also PUBLISHed on `${prefix}:deny:${name}` where the store can push (Redis, not Upstash).
 */
import { SluiceError } from '@sluice/core';
import {
  DENY_LOG_LENGTH,
  changeText,
  entryText,
  newEpoch,
  type DenyChangeResult,
  type DenyChangesRead,
  type DenyListChange,
  type DenyListSource,
  type DenyListVersion,
  type DenyPage,
} from '@sluice/core/config';
import { describeValue, positiveInteger } from '@sluice/core/internal';
import { DENY_CHANGE_SCRIPT, DENY_READ_SCRIPT } from './config-script.js';

/** Runs `script` with EVAL, the one command a Redis-protocol client lends the deny list. */
export type EvaluateScript = (script: string, keys: string[], args: string[]) => Promise<unknown>;

export interface ScriptDenySourceOptions {
  readonly evaluate: EvaluateScript;
  /** The config source's prefix (`'sluice'` by default): keys and channel start with `${prefix}:deny:`. */
  readonly prefix: string;
  /** Whether each change is PUBLISHed on denyChannel(prefix, name): Redis pushes, Upstash (REST) cannot. */
  readonly publish: boolean;
  /** The config source's name, for errors: `redisConfigSource`, `upstashConfigSource`. */
  readonly where: string;
}

/** The entries' HASH, the `meta` HASH (epoch, version), the log's LIST and the ends' ZSET of list `name`, in the scripts' KEYS order. */
export function denyKeys(prefix: string, name: string): [entries: string, meta: string, log: string, expiry: string] {
  const entries = `${prefix}:deny:{${name}}`;
  return [entries, `${entries}:meta`, `${entries}:log`, `${entries}:expiry`];
}

/** The channel each change of list `name` is announced on, its stamped text the message. */
export function denyChannel(prefix: string, name: string): string {
  return `${prefix}:deny:${name}`;
}

/** Every string the deny scripts return starts with this (see src/lua/deny-read.lua): no JSON text does. */
const REPLY_MARK = '~';
/** HSCAN's cursor: an unsigned decimal, `'0'` at the start and the end of a scan. */
const CURSOR = /^[0-9]{1,20}$/;

/**
 * The deny list of a Redis-protocol config source, `subscribe` aside (the Redis source adds it over its subscriber
 * connection). Every method is one EVAL.
 */
export function scriptDenySource(options: ScriptDenySourceOptions): Omit<DenyListSource, 'subscribe'> {
  const { evaluate, prefix, publish, where } = options;
  const unmarked = (reply: unknown): string[] => {
    if (!Array.isArray(reply)) throw badReply(where, reply);
    return reply.map((item: unknown) => {
      if (typeof item !== 'string' || !item.startsWith(REPLY_MARK)) throw badReply(where, reply);
      return item.slice(REPLY_MARK.length);
    });
  };
  const versionOf = (texts: readonly string[]): DenyListVersion | undefined =>
    texts.length < 2 ? undefined : { epoch: texts[0]!, version: Number(texts[1]) };
  return {
    async change(name: string, change: DenyListChange): Promise<DenyChangeResult> {
      const args = [
        newEpoch(),
        publish ? denyChannel(prefix, name) : '',
        String(DENY_LOG_LENGTH),
        changeText(change),
        change.clear === true ? '1' : '0',
        change.expireBefore === undefined ? '' : String(change.expireBefore),
        String(change.remove?.length ?? 0),
      ];
      for (const match of change.remove ?? []) args.push(match);
      for (const entry of change.add ?? []) args.push(entry.match, entryText(entry), entry.until === undefined ? '' : String(entry.until));
      const reply = unmarked(await evaluate(DENY_CHANGE_SCRIPT, denyKeys(prefix, name), args));
      const version = versionOf(reply);
      if (version === undefined || reply.length !== 3) throw badReply(where, reply);
      return { ...version, removed: Number(reply[2]) };
    },
    async readChanges(name: string, since: DenyListVersion | undefined): Promise<DenyChangesRead> {
      const args = ['changes', since?.epoch ?? '', String(since?.version ?? 0)];
      const texts = unmarked(await evaluate(DENY_READ_SCRIPT, denyKeys(prefix, name), args));
      return { version: versionOf(texts), changes: texts[2] === 'log' ? texts.slice(3) : undefined };
    },
    async readPage(name: string, cursor: string, count: number): Promise<DenyPage> {
      if (typeof cursor !== 'string' || !CURSOR.test(cursor)) {
        throw new SluiceError(
          'INVALID_OPTION',
          `${where}: deny.readPage's cursor must be '0' or the cursor a page answered, got ${describeValue(cursor)}`,
        );
      }
      positiveInteger(count, `${where}: deny.readPage's count`);
      const texts = unmarked(await evaluate(DENY_READ_SCRIPT, denyKeys(prefix, name), ['page', cursor, String(count)]));
      const version = versionOf(texts);
      if (version === undefined) return { entries: [], cursor: '0', version: undefined };
      return { entries: texts.slice(3), cursor: texts[2]!, version };
    },
  };
}

function badReply(where: string, reply: unknown): SluiceError {
  return new SluiceError(
    'STORE_ERROR',
    `${where}: a deny list script answered ${describeValue(reply)}, not the texts it returns (is the server a Redis-protocol store that runs Lua scripts?)`,
  );
}
