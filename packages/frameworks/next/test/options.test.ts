import { fixedWindow, isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { rateLimit, type NextRateLimitOptions } from '../src/index.js';
import { memoryLimiter, nextRequest, type fetchEvent } from './support.js';

const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 5, window: '10s' }) });

function failure(options: unknown): { code: string; message: string } {
  try {
    rateLimit(options as NextRateLimitOptions);
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    return { code: error.code, message: error.message };
  }
  throw new Error('rateLimit accepted the options');
}

describe('options are checked when the limiter is built', () => {
  it('refuses a configuration that could identify nobody: Next.js has no socket address', () => {
    for (const options of [
      { limiter },
      { limiter, clientIp: {} },
      { limiter, clientIp: { ipv6Prefix: 48 } },
      { limiter, onMissingIdentity: 'refuse' },
    ]) {
      const { code, message } = failure(options);
      expect(code).toBe('INVALID_OPTION');
      expect(message).toContain('request.ip was removed in Next 15');
      expect(message).toContain("clientIp: { platform: 'vercel' | 'cloudflare' | 'fly' }");
    }
  });

  it('refuses proxy CIDR blocks, which cannot be checked without a socket address', () => {
    for (const trustProxy of ['10.0.0.0/8', ['loopback'], 'private']) {
      const { code, message } = failure({ limiter, clientIp: { trustProxy } });
      expect(code).toBe('INVALID_OPTION');
      expect(message).toContain('clientIp.trustProxy lists proxy addresses');
      expect(message).toContain('use a hop count');
    }
    expect(failure({ limiter, identify: () => 'u', clientIp: { platform: 'cloudflare', trustProxy: ['173.245.48.0/20'] } }).code).toBe(
      'INVALID_OPTION',
    );
  });

  it('accepts every configuration that can identify a request', () => {
    const accepted: NextRateLimitOptions[] = [
      { limiter, identify: () => 'u' },
      { limiter, clientIp: { platform: 'fly' } },
      { limiter, clientIp: { trustProxy: 2 } },
      { limiter, clientIp: () => '203.0.113.7' },
      { limiter, clientIp: false },
      { limiter, onMissingIdentity: { bucket: 'anonymous' } },
      { limiter, onMissingIdentity: 'skip' },
      { limiter: { limiter, identify: (request) => request.headers.get('x-tenant') } },
      { limiter: [{ limiter, kind: 'shed' }] },
    ];
    for (const options of accepted) expect(() => rateLimit(options)).not.toThrow();
  });

  it('names the field and what it accepts for hooks that are not functions', () => {
    for (const field of ['onDecision', 'waitUntil', 'onLimited', 'onError']) {
      const { code, message } = failure({ limiter, clientIp: { platform: 'vercel' }, [field]: 'yes' });
      expect(code).toBe('INVALID_OPTION');
      expect(message).toMatch(new RegExp(`^\\[sluice\\] ${field} must be a function .*, got "yes"$`));
    }
  });

  it("passes everything else to @sluice/http's validation (typos are UNKNOWN_OPTION)", () => {
    const { code, message } = failure({ limiter, clientIp: { platform: 'vercel' }, skipp: () => true });
    expect(code).toBe('UNKNOWN_OPTION');
    expect(message).toContain('"skipp"');
    expect(failure(null).message).toBe('[sluice] rateLimit options must be an object, got null');
  });

  it('a limiter passed where the options go says to pass { limiter }', () => {
    expect(failure(limiter)).toEqual({
      code: 'INVALID_OPTION',
      message:
        '[sluice] rateLimit options: got a limiter where the options object goes; pass { limiter } instead, e.g. rateLimit({ limiter })',
    });
  });

  it('the second argument must be the NextFetchEvent', async () => {
    const limit = rateLimit({ limiter, clientIp: { platform: 'vercel' } });
    await expect(limit(nextRequest(), {} as ReturnType<typeof fetchEvent>)).rejects.toThrow(
      'the second argument must be the NextFetchEvent',
    );
  });
});
