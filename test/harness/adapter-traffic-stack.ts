/**
 * The traffic stack suite every framework adapter runs: the four limiters of the article 'Scaling your API with rate
 * limiters' in front of a real HTTP server on 127.0.0.1, driven by real clients. It checks the status and problem
 * body per layer (429 for rate and concurrency, 503 for the shedders), which layer refused, the priority classes,
 * that concurrency counts the client under the rate layer's identity, and that no lease leaks however a response
 * ends (finished, client aborted mid-request, handler threw). Each adapter describes how to mount its stack and calls
 * `describeAdapterTrafficStack` at the top level of a test file, as stores call `describeStoreConformance`.
 */
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { createConcurrencyLimiter, type ConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder, createUtilizationShedder, type FleetShedder, type UtilizationShedder } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';

/** The layers after the rate layer, as every adapter's stack takes them; `Req` is what the adapter's callbacks receive. */
export interface AdapterStackOptions<Req> {
  concurrency?: { limiter: ConcurrencyLimiter; identify?: (request: Req) => string | undefined };
  fleet?: FleetShedder;
  worker?: UtilizationShedder;
  priority?: (request: Req) => string;
}

/** What the suite asks an adapter to serve. */
export interface AdapterApp<Req> {
  /** The stack's layers. */
  stack: AdapterStackOptions<Req>;
  /** A rate layer on this limiter, in front of the stack, identifying the client by its address (as the adapter does by default). */
  rate?: Limiter;
  /** The promise /slow waits on before it completes; the suite settles it. */
  hold: () => Promise<void>;
}

/** A server the adapter started. */
export interface ServedApp {
  port: number;
  close: () => Promise<void>;
}

export interface TrafficStackAdapter<Req> {
  /** Names the suite's describe block. */
  name: string;
  /**
   * Starts a real HTTP server on 127.0.0.1 (port 0): the rate layer when `rate` is given, then the stack, in front of
   * three GET routes: /fast answers 200 with JSON `{ ok: true, stack }` (`stack`: the per-request info the stack left,
   * where the adapter has one), /slow completes only once `hold()` has resolved (a streaming adapter may send its
   * head first and hold the body), /throw throws, which the app answers with 500.
   */
  serve: (app: AdapterApp<Req>) => Promise<ServedApp>;
  /** Builds the stack from options without serving it: it throws, or rejects, on bad options. */
  create: (options: AdapterStackOptions<Req>) => unknown;
  /** A request header, as the adapter's `identify` and `priority` callbacks read it. */
  header: (request: Req, name: string) => string | undefined;
  /** The identity the rate layer resolves for a client on 127.0.0.1, under which concurrency counts it. */
  loopbackIdentity: string;
  /** Whether the rate layer is an option of the stack (then concurrency without identify needs it) or registered on its own. */
  rateLayer: 'option' | 'separate';
  /** Whether /fast reports the stack's per-request info (`{ refusedBy, priority }`, without the undefined fields). */
  reportsInfo: boolean;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Starts a request and destroys its socket once the server has it: a client that went away. */
function abandoned(port: number, path: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers });
    req.on('error', () => resolve());
    req.end();
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 50);
  });
}

/** Registers the traffic stack suite (vitest `describe`/`it`) for one adapter. Call it at the top level of a test file. */
export function describeAdapterTrafficStack<Req>(adapter: TrafficStackAdapter<Req>): void {
  const servers: ServedApp[] = [];
  let opener = (): void => undefined;
  let gate!: Promise<void>;
  const reset = () => void (gate = new Promise((resolve) => (opener = resolve)));
  reset();
  /** Lets every /slow request waiting so far complete. */
  const open = () => {
    opener();
    reset();
  };

  afterEach(async () => {
    open();
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  async function app(stack: AdapterStackOptions<Req>, rate?: Limiter) {
    const served = await adapter.serve({ stack, hold: () => gate, ...(rate === undefined ? {} : { rate }) });
    servers.push(served);
    const base = `http://127.0.0.1:${served.port}`;
    const get = (path: string, headers: Record<string, string> = {}) => {
      const response = fetch(`${base}${path}`, { headers });
      // A request still open when a failed test closes the server rejects; awaiting it still throws.
      response.catch(() => undefined);
      return response;
    };
    return { get, port: served.port };
  }

  const client = (request: Req) => adapter.header(request, 'x-client') ?? 'anonymous';
  const expectInfo = async (response: Response, info: object) => {
    const body = (await response.json()) as { ok: boolean; stack?: unknown };
    expect(body.ok).toBe(true);
    if (adapter.reportsInfo) expect(body.stack).toEqual(info);
  };

  describe(`traffic stack: ${adapter.name}`, () => {
    it('concurrency: a third request in flight gets 429 naming the layer; finished, aborted and failed requests all release', async () => {
      const limiter = createConcurrencyLimiter({ store: memoryStore(), limit: 2, name: 'in-flight' });
      const { get, port } = await app({ concurrency: { limiter, identify: client } });
      const headers = { 'x-client': 'alice' };
      const slow = [get('/slow', headers), get('/slow', headers)];
      await settle();
      const third = await get('/fast', headers);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).not.toBeNull();
      expect(await third.json()).toMatchObject({ status: 429, refusedBy: 'concurrency', 'violated-policies': ['in-flight'] });
      // Another client has slots of its own.
      expect((await get('/fast', { 'x-client': 'bob' })).status).toBe(200);
      open();
      const finished = await Promise.all(slow);
      expect(finished.map((r) => r.status)).toEqual([200, 200]);
      await Promise.all(finished.map((r) => r.text()));
      await settle();
      // Two clients that go away mid-request, and a handler that throws: none of them keeps a slot.
      await Promise.all([abandoned(port, '/slow', headers), abandoned(port, '/slow', headers)]);
      await settle();
      expect((await get('/throw', headers)).status).toBe(500);
      await settle();
      const after = await Promise.all([get('/fast', headers), get('/fast', headers)]);
      expect(after.map((r) => r.status)).toEqual([200, 200]);
      await expectInfo(after[0]!, {});
    });

    it('rate first: a request refused by the rate layer takes no lease and carries the RateLimit headers', async () => {
      const store = memoryStore();
      const inFlight = createConcurrencyLimiter({ store, limit: 1, name: 'in-flight' });
      const rate = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), name: 'rate' });
      const { get } = await app({ concurrency: { limiter: inFlight } }, rate);
      const allowed = await get('/fast');
      expect(allowed.status).toBe(200);
      expect(allowed.headers.get('ratelimit')).toMatch(/^"rate";r=0;t=\d+$/);
      await allowed.text();
      await settle();
      const refused = await get('/fast');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('ratelimit')).toMatch(/^"rate";r=0;t=\d+$/);
      expect(await refused.json()).toMatchObject({ 'violated-policies': ['rate'] });
      // Neither request left a lease behind: the one slot is free.
      const d = await inFlight.acquire(adapter.loopbackIdentity);
      expect(d.allowed).toBe(true);
      expect(d.held).toBe(1);
    });

    it("concurrency without identify counts the client under the rate layer's identity", async () => {
      const store = memoryStore();
      const inFlight = createConcurrencyLimiter({ store, limit: 1, name: 'in-flight' });
      const rate = createLimiter({ store, rules: fixedWindow({ limit: 100, window: '1m' }), name: 'rate' });
      const { get } = await app({ concurrency: { limiter: inFlight } }, rate);
      const slow = get('/slow');
      await settle();
      expect((await inFlight.acquire(adapter.loopbackIdentity)).allowed).toBe(false); // the slow request holds that slot
      const refused = await get('/fast'); // the same client address: one slot
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ refusedBy: 'concurrency', 'violated-policies': ['in-flight'] });
      open();
      const finished = await slow;
      expect(finished.status).toBe(200);
      await finished.text();
      await settle();
      expect((await get('/fast')).status).toBe(200);
    });

    it('fleet: non-critical work gets 503 past its share, critical still passes', async () => {
      const fleet = createFleetShedder({ store: memoryStore(), capacity: 2, reserve: 0.5, classes: ['critical', 'normal'] });
      const { get } = await app({ fleet, priority: (request) => (adapter.header(request, 'x-critical') === '1' ? 'critical' : 'normal') });
      const slow = get('/slow');
      await settle();
      const shed = await get('/fast');
      expect(shed.status).toBe(503);
      expect(shed.headers.get('retry-after')).not.toBeNull();
      expect(await shed.json()).toMatchObject({ status: 503, refusedBy: 'fleet', title: 'Service Unavailable' });
      const critical = await get('/fast', { 'x-critical': '1' });
      expect(critical.status).toBe(200);
      await expectInfo(critical, { priority: 'critical' });
      open();
      expect((await slow).status).toBe(200);
    });

    it('worker: the lowest classes are shed first', async () => {
      let now = 1_700_000_000_000;
      const worker = createUtilizationShedder({ signal: () => 1, delay: 0, rampUp: '4s', clock: () => now, random: () => 0 });
      worker.check('critical');
      for (let i = 0; i < 2; i++) {
        now += 1000;
        worker.check('critical');
      } // a = 0.5 of 3 sheddable classes: test and half of read
      const { get } = await app({ worker, priority: (request) => adapter.header(request, 'x-class') ?? 'read' });
      const status = async (cls: string) => (await get('/fast', { 'x-class': cls })).status;
      const shed = await get('/fast', { 'x-class': 'test' });
      expect(shed.status).toBe(503);
      expect(await shed.json()).toMatchObject({ status: 503, refusedBy: 'worker' });
      expect(await status('critical')).toBe(200);
      expect(await status('write')).toBe(200);
    });

    it('refuses bad options clearly', async () => {
      const build = async (options: AdapterStackOptions<Req>) => adapter.create(options);
      const fleet = createFleetShedder({ store: memoryStore(), capacity: 2 });
      await expect(build({ fleet })).rejects.toThrow(/priority must be a function/);
      await expect(build({ ratelimit: {} } as unknown as AdapterStackOptions<Req>)).rejects.toThrow(/unknown option "ratelimit"/);
      const concurrency = { limiter: createConcurrencyLimiter({ store: memoryStore(), limit: 1 }) };
      // Without identify, concurrency counts under the rate layer's identity: a stack that takes the rate layer as an
      // option and is given none refuses that; one whose rate layer is registered on its own cannot tell.
      if (adapter.rateLayer === 'option') await expect(build({ concurrency })).rejects.toThrow(/concurrency needs identify/);
      else await build({ concurrency });
    });
  });
}
