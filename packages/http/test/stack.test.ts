// The traffic stack's framework-neutral part that the four adapters share: checking a stack's options (and
// splitting the rate layer from the others), the refusal as status, headers and body, and leases held without a
// Node response (the web adapters').
import type { ConcurrencyLimiter, Lease } from '@sluice/core/concurrency';
import { describe, expect, it } from 'vitest';
import { checkStackLayers, heldUntilEnd, runStackLayers } from '../src/adapter/index.js';

const WITH_RATE = { where: 'trafficStack', example: '{ rate, concurrency: { limiter } }', rateOption: true };
const WITHOUT_RATE = { where: 'trafficStackPlugin', example: '{ concurrency: { limiter } }', rateOption: false };

function countingLease(): Lease & { released: number } {
  const lease = { released: 0, release: async () => void lease.released++ };
  return lease as unknown as Lease & { released: number };
}

/** A concurrency limiter that answers every acquire with `answer`. */
function concurrency(answer: { allowed: boolean; retryAfter: number; lease?: Lease }): ConcurrencyLimiter {
  return { name: 'in-flight', acquire: async () => answer } as unknown as ConcurrencyLimiter;
}

describe('checkStackLayers', () => {
  it('returns the rate options apart from the layers after it', () => {
    const rate = { limiter: 'a rate limiter' };
    const priority = () => 'read';
    const { rate: split, layers } = checkStackLayers<Request, typeof rate>({ rate, priority }, WITH_RATE);
    expect(split).toBe(rate);
    expect(layers).toEqual({ priority });
  });

  it('names the adapter and shows options when the argument is not an object', () => {
    expect(() => checkStackLayers(null as never, WITH_RATE)).toThrow(
      'trafficStack: options must be an object such as { rate, concurrency: { limiter } }',
    );
  });

  it('refuses rate where the rate layer is registered on its own, and unknown names', () => {
    expect(() => checkStackLayers({ rate: {} } as never, WITHOUT_RATE)).toThrow(/trafficStackPlugin.*rate/);
    expect(() => checkStackLayers({ concurency: {} } as never, WITH_RATE)).toThrow(/trafficStack.*concurency/);
  });

  it('wants identify for concurrency only where no rate layer can give the client', () => {
    const layer = { limiter: concurrency({ allowed: true, retryAfter: 0 }) };
    expect(() => checkStackLayers({ concurrency: layer }, WITH_RATE)).toThrow('trafficStack: concurrency needs identify');
    expect(() => checkStackLayers({ concurrency: layer, rate: {} }, WITH_RATE)).not.toThrow();
    expect(() => checkStackLayers({ concurrency: layer }, WITHOUT_RATE)).not.toThrow();
  });
});

describe('a refusal', () => {
  it('carries the status, Retry-After in whole seconds, the problem content type and a body naming the layer', async () => {
    const layers = { concurrency: { limiter: concurrency({ allowed: false, retryAfter: 1500 }) } };
    const { refusal } = await runStackLayers(layers, {}, 'client', () => {});
    expect(refusal).toMatchObject({
      layer: 'concurrency',
      status: 429,
      headers: { 'Retry-After': '2', 'Content-Type': 'application/problem+json' },
    });
    expect(JSON.parse(refusal!.body)).toMatchObject({ status: 429, refusedBy: 'concurrency', retryAfterSeconds: 2 });
  });
});

describe('heldUntilEnd without a response', () => {
  it('holds leases until release(), once, and gives back at once a lease that comes after', () => {
    const leases = heldUntilEnd();
    expect(leases.holding).toBe(false);
    const first = countingLease();
    leases.hold(first);
    expect(leases.holding).toBe(true);
    expect(first.released).toBe(0);
    leases.release();
    leases.release();
    expect(first.released).toBe(1);
    expect(leases.holding).toBe(false);
    const late = countingLease();
    leases.hold(late);
    expect(late.released).toBe(1);
  });
});
