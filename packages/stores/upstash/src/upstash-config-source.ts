import { SluiceError } from '@sluice/core';
import type { ConfigSource, DenyListSource } from '@sluice/core/config';
import { describeValue, rejectUnknownOptions } from '@sluice/core/internal';
import { REPLACE_CONFIG_SCRIPT, scriptDenySource } from '@sluice/redis-script';
import type { UpstashRestOptions } from './upstash-rest.js';
import { notAnUpstashClient, restClientFor } from './upstash-store.js';

/** The methods of @upstash/redis's `Redis` the config source calls (eval: the writers' compare and set). */
export interface UpstashConfigClient {
  get(key: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

export interface UpstashConfigSourceOptions {
  /**
   * The document of limiter `name` is the key `${prefix}:config:${name}` and its deny list is under
   * `${prefix}:deny:{${name}}` (the Redis source's keys). @default 'sluice'
   */
  prefix?: string;
}

export interface UpstashConfigSource extends ConfigSource {
  /**
   * The deny lists (core's DenyListSource), in the Redis source's keys and through its scripts, each change one EVAL:
   * `${prefix}:deny:{${name}}` (entries), `…:meta` (epoch and version), `…:log` (the last changes). No push over REST:
   * watchers pick changes up with their periodic readChanges, one EVAL each.
   */
  readonly deny: DenyListSource;
}

/**
 * Runtime configuration (core's `watchConfig`) in Upstash Redis: each limiter's document is one string key, read
 * and written with GET and SET over REST. HTTP has no push, so instances pick a change up by the watcher's
 * periodic read: within `refresh` (1 s by default) plus one request. The key is the one `redisConfigSource`
 * uses, so the CLI and code on either client see the same document; so are the deny lists' (`deny`). Edge-safe.
 * `{ url, token }` uses the store's own client (`upstashRest()`).
 * @example watchConfig(limiter, upstashConfigSource({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }))
 */
export function upstashConfigSource(
  client: UpstashConfigClient | UpstashRestOptions,
  options: UpstashConfigSourceOptions = {},
): UpstashConfigSource {
  const redis = restClientFor(client);
  const candidate = redis as Partial<UpstashConfigClient> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.get !== 'function' ||
    typeof candidate.set !== 'function' ||
    typeof candidate.del !== 'function' ||
    typeof candidate.eval !== 'function'
  ) {
    throw notAnUpstashClient('upstashConfigSource', describeValue(redis));
  }
  if (typeof options !== 'object' || options === null)
    throw new SluiceError('INVALID_OPTION', `upstashConfigSource: options must be an object, got ${describeValue(options)}`);
  rejectUnknownOptions(options, ['prefix'], 'upstashConfigSource');
  const prefix = options.prefix ?? 'sluice';
  if (typeof prefix !== 'string' || prefix.length === 0) {
    throw new SluiceError('INVALID_OPTION', `upstashConfigSource: prefix must be a non-empty string, got ${describeValue(prefix)}`);
  }
  const key = (name: string) => `${prefix}:config:${name}`;
  return {
    deny: scriptDenySource({
      evaluate: (script, keys, args) => redis.eval(script, keys, args),
      prefix,
      publish: false,
      where: 'upstashConfigSource',
    }),
    async read(name) {
      const value = await redis.get(key(name));
      if (value === null || value === undefined) return undefined;
      // The client parses JSON replies by default (automaticDeserialization): the document comes back as an
      // object, written out again here so the watcher sees text either way.
      return typeof value === 'string' ? value : JSON.stringify(value);
    },
    async write(name, text) {
      await redis.set(key(name), text);
    },
    async replace(name, expectedRevision, text) {
      return (await redis.eval(REPLACE_CONFIG_SCRIPT, [key(name)], [String(expectedRevision), text])) === 1;
    },
    async remove(name) {
      await redis.del(key(name));
    },
  };
}
