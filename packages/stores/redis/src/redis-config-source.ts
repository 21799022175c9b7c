import { SluiceError } from '@sluice/core';
import type { ConfigSource, DenyListSource, Unsubscribe } from '@sluice/core/config';
import { describeValue, rejectUnknownOptions } from '@sluice/core/internal';
import { REPLACE_CONFIG_SCRIPT } from '@sluice/redis-script';
import type { Cluster, Redis } from 'ioredis';
import { redisDenySource } from './redis-deny-source.js';

export interface RedisConfigSourceOptions {
  /**
   * The document of limiter `name` is the string key `${prefix}:config:${name}`, announced on the channel of the same
   * name; its deny list is under `${prefix}:deny:{${name}}` (see `deny`). @default 'sluice'
   */
  prefix?: string;
}

/** The ioredis members the source uses; `Redis` and `Cluster` both have them. */
type ConfigClient = Pick<Redis, 'get' | 'set' | 'del' | 'publish' | 'eval'> & { duplicate(): Subscriber };
type Subscriber = Pick<Redis, 'subscribe' | 'unsubscribe' | 'disconnect' | 'on'>;

/**
 * Runtime configuration (core's `watchConfig`) in Redis: each limiter's document is one string key, and every
 * write is followed by a PUBLISH on a channel of the key's name, so watchers read the change within a round trip
 * or two instead of at their next refresh. Watchers subscribe through one connection the source duplicates from
 * the client (a subscribed connection can run nothing else), opened on the first subscription and closed with
 * the last. Works on a `Cluster` too (PUBLISH reaches every node). A push lost while the subscriber reconnects is
 * made up for: every watcher reads again when it is back, and the watcher's periodic read bounds the rest.
 * The client is the user's: the source never closes it.
 * Each limiter's deny list has a structure of its own beside the document (`deny`, core's DenyListSource): entries
 * in a hash, changed one at a time by a script and pushed on the same subscriber connection.
 * @example watchConfig(limiter, redisConfigSource(redis))
 */
export function redisConfigSource(client: Redis | Cluster, options: RedisConfigSourceOptions = {}): RedisConfigSource {
  return new RedisConfigSource(client, options);
}

export class RedisConfigSource implements ConfigSource {
  /** Key and channel prefix: `${prefix}:config:`. */
  readonly prefix: string;
  private readonly client: ConfigClient;
  private subscriber: Subscriber | undefined = undefined;
  /** Listeners per channel, on the one subscriber connection, each given the message ('' after a reconnect). */
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  /**
   * The deny lists (core's DenyListSource): the keys `${prefix}:deny:{${name}}` (entries), `…:meta` (epoch and
   * version) and `…:log` (the last changes), one hash slot per list; each change PUBLISHed on `${prefix}:deny:${name}`.
   */
  readonly deny: DenyListSource;

  constructor(client: Redis | Cluster, options: RedisConfigSourceOptions = {}) {
    const candidate = client as Partial<ConfigClient> | null;
    if (
      typeof candidate !== 'object' ||
      candidate === null ||
      typeof candidate.get !== 'function' ||
      typeof candidate.publish !== 'function' ||
      typeof candidate.duplicate !== 'function'
    ) {
      throw new SluiceError(
        'INVALID_OPTION',
        `redisConfigSource: client must be an ioredis Redis or Cluster instance, e.g. redisConfigSource(new Redis()), got ${describeValue(client)}`,
      );
    }
    if (typeof options !== 'object' || options === null)
      throw new SluiceError('INVALID_OPTION', `redisConfigSource: options must be an object, got ${describeValue(options)}`);
    rejectUnknownOptions(options, ['prefix'], 'redisConfigSource');
    const prefix = options.prefix ?? 'sluice';
    if (typeof prefix !== 'string' || prefix.length === 0) {
      throw new SluiceError('INVALID_OPTION', `redisConfigSource: prefix must be a non-empty string, got ${describeValue(prefix)}`);
    }
    this.client = client as unknown as ConfigClient;
    this.prefix = `${prefix}:config:`;
    this.deny = redisDenySource(this.client, prefix, (channel, listener) => this.listen(channel, listener));
  }

  /** The key (and channel) that holds limiter `name`'s document. */
  key(name: string): string {
    return this.prefix + name;
  }

  async read(name: string): Promise<string | undefined> {
    return (await this.client.get(this.key(name))) ?? undefined;
  }

  async write(name: string, text: string): Promise<void> {
    await this.client.set(this.key(name), text);
    await this.client.publish(this.key(name), 'changed');
  }

  async replace(name: string, expectedRevision: number, text: string): Promise<boolean> {
    const key = this.key(name);
    return (await this.client.eval(REPLACE_CONFIG_SCRIPT, 1, key, String(expectedRevision), text)) === 1;
  }

  async remove(name: string): Promise<void> {
    await this.client.del(this.key(name));
    await this.client.publish(this.key(name), 'removed');
  }

  subscribe(name: string, onChange: () => void): Promise<Unsubscribe> {
    return this.listen(this.key(name), () => onChange());
  }

  /** Calls `onMessage` with each message on `channel` (and with '' when the subscriber is back from a reconnect). */
  private async listen(channel: string, onMessage: (message: string) => void): Promise<Unsubscribe> {
    const subscriber = (this.subscriber ??= this.openSubscriber());
    let set = this.listeners.get(channel);
    const first = set === undefined;
    if (set === undefined) this.listeners.set(channel, (set = new Set()));
    // Wrapped, so that two subscriptions of one function are two (each unsubscribes its own).
    const listener = (message: string) => onMessage(message);
    set.add(listener);
    if (first) {
      try {
        await subscriber.subscribe(channel);
      } catch (error) {
        await this.drop(channel, listener);
        throw error;
      }
    }
    return () => this.drop(channel, listener);
  }

  private async drop(channel: string, listener: (message: string) => void): Promise<void> {
    const set = this.listeners.get(channel);
    if (set === undefined || !set.delete(listener) || set.size > 0) return;
    this.listeners.delete(channel);
    const subscriber = this.subscriber;
    if (subscriber === undefined) return;
    if (this.listeners.size === 0) {
      // The last one: the connection goes, so that a process with nothing left to do can exit.
      this.subscriber = undefined;
      subscriber.disconnect();
    } else {
      await subscriber.unsubscribe(channel);
    }
  }

  private openSubscriber(): Subscriber {
    const subscriber = this.client.duplicate();
    subscriber.on('message', (channel: string, message: string) => this.notify(this.listeners.get(channel), message));
    // Connection errors while Redis is away are the watchers' to report (their reads fail); without a listener
    // ioredis would print each one.
    subscriber.on('error', () => {});
    let connections = 0;
    subscriber.on('ready', () => {
      // Back after a reconnect (ioredis subscribes again by itself): a write made meanwhile was announced to no one,
      // so every listener is told to read ('' to a deny list's: no change text, read the changes).
      if (connections++ === 0) return;
      for (const set of this.listeners.values()) this.notify(set, '');
    });
    return subscriber;
  }

  private notify(set: Set<(message: string) => void> | undefined, message: string): void {
    for (const listener of [...(set ?? [])]) {
      try {
        listener(message);
      } catch {
        // A subscriber's exception is its own; the others are still told.
      }
    }
  }
}
