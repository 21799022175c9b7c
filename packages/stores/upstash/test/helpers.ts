/** What every store test needs: the fixture's address (started in Node by global-setup.ts), its control API, clients. */
import { Redis, type RedisConfigNodejs } from '@upstash/redis';
import { inject } from 'vitest';
import { fixtureControl } from '../../../../test/harness/upstash-control.js';

export const url = inject('upstashUrl');
export const token = inject('upstashToken');
export const control = fixtureControl(url, token);

type ClientOptions = Omit<RedisConfigNodejs, 'url' | 'token'>;

/** A real @upstash/redis client on the fixture; defaults are the library's own (auto-pipelining, base64). */
export function client(options: ClientOptions = {}): Redis {
  return new Redis({ url, token, enableTelemetry: false, ...options });
}

/** Identities unique per run and environment: the Node and edge-runtime projects share one Redis. */
export function identity(name: string): string {
  return `${name}-${globalThis.crypto.randomUUID()}`;
}
