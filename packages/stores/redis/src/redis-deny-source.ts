import type { DenyListSource, Unsubscribe } from '@sluice/core/config';
import { denyChannel, scriptDenySource } from '@sluice/redis-script';
import type { Redis } from 'ioredis';

/** Subscribes a listener to a channel on the config source's one subscriber connection. */
export type ListenToChannel = (channel: string, onMessage: (message: string) => void) => Promise<Unsubscribe>;

/**
 * The Redis config source's deny lists (core's DenyListSource): the keys and scripts @sluice/redis-script shares
 * with the Upstash source (deny-script.ts), each change also PUBLISHed with its stamped text, which `subscribe`
 * hands to the watcher. The subscription rides on the config source's subscriber connection: after a reconnect
 * the listener gets '' (changes may have been missed: read them).
 */
export function redisDenySource(client: Pick<Redis, 'eval'>, prefix: string, listen: ListenToChannel): DenyListSource {
  const scripted = scriptDenySource({
    evaluate: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    prefix,
    publish: true,
    where: 'redisConfigSource',
  });
  return { ...scripted, subscribe: (name, onChange) => listen(denyChannel(prefix, name), onChange) };
}
