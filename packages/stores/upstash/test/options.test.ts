import { isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { upstashLeaseStore, upstashStore, type UpstashClient } from '../src/index.js';
import { client } from './helpers.js';

function codeOf(action: () => unknown): string | undefined {
  try {
    action();
  } catch (error) {
    if (isSluiceError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  return undefined;
}

describe('upstashStore validation', () => {
  it('refuses something that is not an @upstash/redis client, saying what to pass', () => {
    expect(codeOf(() => upstashStore(undefined as unknown as UpstashClient))).toMatch(
      /^INVALID_OPTION: .*redis must be \{ url, token \} or an @upstash\/redis client/,
    );
    expect(codeOf(() => upstashStore({ get() {} } as unknown as UpstashClient))).toMatch(/^INVALID_OPTION/);
  });

  it('names an unknown option and the accepted ones', () => {
    expect(codeOf(() => upstashStore(client(), { clok: 'store' } as never))).toMatch(
      /^UNKNOWN_OPTION: .*"clok".*accepted options are clock, batch, maxBatch/,
    );
  });

  it('names the field and accepted values for a bad clock', () => {
    expect(codeOf(() => upstashStore(client(), { clock: 'server' as never }))).toMatch(
      /^INVALID_OPTION: .*clock must be 'store' or 'client', got "server"/,
    );
  });

  it('names the field and accepted values for bad batch options', () => {
    expect(codeOf(() => upstashStore(client(), { batch: 1 as never }))).toMatch(/^INVALID_OPTION: .*batch must be true or false, got 1/);
    expect(codeOf(() => upstashStore(client(), { maxBatch: 0 }))).toMatch(
      /^INVALID_OPTION: .*maxBatch must be an integer from 1 to 1000, got 0/,
    );
    expect(codeOf(() => upstashStore(client(), { maxBatch: 64.5 }))).toMatch(
      /^INVALID_OPTION: .*maxBatch must be an integer from 1 to 1000/,
    );
  });

  it('announces its capabilities: leases only on upstashLeaseStore()', () => {
    expect(upstashStore(client()).capabilities).toEqual({
      synchronous: false,
      clock: 'store',
      operations: ['limit', 'reset', 'take', 'reserve'],
    });
    expect(upstashStore(client(), { clock: 'client' }).capabilities.clock).toBe('client');
    expect('lease' in upstashStore(client())).toBe(false);
    expect(upstashLeaseStore(client(), { clock: 'client' }).capabilities).toEqual({
      synchronous: false,
      clock: 'client',
      operations: ['limit', 'reset', 'take', 'reserve', 'lease'],
    });
  });

  it('upstashLeaseStore() checks its client and options as upstashStore() does, under its own name', () => {
    expect(codeOf(() => upstashLeaseStore({} as never))).toMatch(
      /^INVALID_OPTION: \[sluice\] upstashLeaseStore: redis must be \{ url, token \}/,
    );
    expect(codeOf(() => upstashLeaseStore(client(), { clok: 'store' } as never))).toMatch(
      /^UNKNOWN_OPTION: \[sluice\] upstashLeaseStore: unknown option "clok"/,
    );
  });

  it('refuses a lease id outside LEASE_ID_PATTERN with INVALID_OPTION, sending nothing', async () => {
    const store = upstashLeaseStore(client());
    for (const id of ['', 'a b', 'x'.repeat(65), 'a:b']) {
      await expect(store.lease({ key: 'opts:{id}', op: 'acquire', id, limit: 1, ttlMs: 1000, now: 0 })).rejects.toThrow(
        /upstashLeaseStore\.lease: a lease id must be 1 to 64 characters of letters, digits, '_' or '-'/,
      );
    }
  });
});
