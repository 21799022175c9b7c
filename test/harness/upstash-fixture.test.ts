/**
 * The Upstash REST fixture speaks the protocol that Upstash documents and that the real @upstash/redis client
 * expects: checked here over real HTTP against a real redis-server, with raw fetch for the wire format and with
 * the real client for what a user would do.
 */
import { Redis } from '@upstash/redis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES, startUpstashFixture, type UpstashFixture } from './upstash-fixture.js';
import { startRedis, type RedisServer } from './redis.js';
import { ErrorReply, RespConnection } from './upstash-resp.js';
import { sha1Hex, UNDECLARED_KEY_ERROR } from './upstash-script-flags.js';
import { REPLACE_CONFIG_SCRIPT } from '@sluice/redis-script';
import { UPSTASH_LEASE_SCRIPT, UPSTASH_LIMIT_SCRIPT } from '@sluice/upstash';

let redisServer: RedisServer;
let fixture: UpstashFixture;

beforeAll(async () => {
  redisServer = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redisServer.port, token: 'fixture-token' });
});

afterAll(async () => {
  await fixture?.close();
  await redisServer?.stop();
});

beforeEach(() => {
  fixture.setFault(undefined);
  fixture.resetStats();
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown }> {
  const response = await fetch(fixture.url + path, {
    method: 'POST',
    headers: { authorization: 'Bearer fixture-token', 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('wire format', () => {
  it('runs a command sent as a JSON array to /', async () => {
    expect(await post('/', ['SET', 'wire:a', 'hello'])).toEqual({ status: 200, json: { result: 'OK' } });
    expect(await post('/', ['GET', 'wire:a'])).toEqual({ status: 200, json: { result: 'hello' } });
    expect(await post('/', ['INCRBY', 'wire:n', 5])).toEqual({ status: 200, json: { result: 5 } });
    expect(await post('/', ['GET', 'wire:missing'])).toEqual({ status: 200, json: { result: null } });
  });

  it('runs the path form, with a POST body as last argument and query parameters after it', async () => {
    const get = (path: string) => fetch(fixture.url + path, { headers: { authorization: 'Bearer fixture-token' } }).then((r) => r.json());
    expect(await get('/set/wire:path/bar')).toEqual({ result: 'OK' });
    expect(await get('/get/wire:path')).toEqual({ result: 'bar' });
    const posted = await fetch(`${fixture.url}/set/wire:body?EX=100`, {
      method: 'POST',
      headers: { authorization: 'Bearer fixture-token' },
      body: '{"a":1}',
    });
    expect(await posted.json()).toEqual({ result: 'OK' });
    expect(await get('/get/wire:body')).toEqual({ result: '{"a":1}' });
    const ttl = (await get('/ttl/wire:body')) as { result: number };
    expect(ttl.result).toBeGreaterThan(90);
  });

  it('encodes every string except the status OK in base64 when Upstash-Encoding: base64 is asked for', async () => {
    const headers = { 'upstash-encoding': 'base64' };
    expect(await post('/', ['SET', 'wire:enc', 'héllo ✓'], headers)).toEqual({ status: 200, json: { result: 'OK' } });
    expect(await post('/', ['GET', 'wire:enc'], headers)).toEqual({ status: 200, json: { result: b64('héllo ✓') } });
    expect(await post('/', ['PING'], headers)).toEqual({ status: 200, json: { result: b64('PONG') } });
    expect(await post('/', ['RPUSH', 'wire:list', 'x', 'y'], headers)).toEqual({ status: 200, json: { result: 2 } });
    expect(await post('/', ['LRANGE', 'wire:list', 0, -1], headers)).toEqual({ status: 200, json: { result: [b64('x'), b64('y')] } });
  });

  it('answers a failing command with 400 and { error }', async () => {
    const unknown = await post('/', ['NOSUCHCOMMAND', 'x']);
    expect(unknown.status).toBe(400);
    expect((unknown.json as { error: string }).error).toMatch(/^ERR unknown command/);
    await post('/', ['SET', 'wire:str', 'x']);
    const wrongType = await post('/', ['LPUSH', 'wire:str', 'y']);
    expect(wrongType).toEqual({ status: 400, json: { error: expect.stringMatching(/^WRONGTYPE/) } });
    expect((await post('/', 'not json')).status).toBe(400);
    expect((await post('/', { not: 'an array' })).status).toBe(400);
  });

  it("refuses a missing or wrong token with Upstash's 401 WRONGPASS answer, and accepts ?_token=", async () => {
    const missing = await fetch(fixture.url + '/', { method: 'POST', body: '["PING"]' });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ error: 'WRONGPASS invalid or missing auth token' });
    const wrong = await post('/', ['PING'], { authorization: 'Bearer not-the-token' });
    expect(wrong).toEqual({ status: 401, json: { error: 'WRONGPASS invalid or missing auth token' } });
    const viaQuery = await fetch(`${fixture.url}/ping?_token=fixture-token`);
    expect(await viaQuery.json()).toEqual({ result: 'PONG' });
    expect(fixture.stats.unauthorized).toBe(2);
  });

  it('refuses a request body over 1 MB (1,048,576 bytes) with 400 and ERR max request size exceeded, on every endpoint', async () => {
    const fits = ['SET', 'wire:big', 'x'.repeat(MAX_REQUEST_BYTES - JSON.stringify(['SET', 'wire:big', '']).length)];
    expect(JSON.stringify(fits).length).toBe(MAX_REQUEST_BYTES);
    expect(await post('/', fits)).toEqual({ status: 200, json: { result: 'OK' } });
    const over = ['SET', 'wire:big', `${fits[2]}y`];
    expect(await post('/', over)).toEqual({ status: 400, json: { error: 'ERR max request size exceeded' } });
    expect(await post('/pipeline', [over])).toEqual({ status: 400, json: { error: 'ERR max request size exceeded' } });
    // Counted in bytes, not characters.
    const wide = ['SET', 'wire:big', '漢'.repeat(MAX_REQUEST_BYTES / 3)];
    expect(await post('/', wide)).toEqual({ status: 400, json: { error: 'ERR max request size exceeded' } });
    expect(await post('/', ['STRLEN', 'wire:big'])).toEqual({ status: 200, json: { result: fits[2]!.length } });
  });

  it('refuses methods other than HEAD, GET, POST and PUT with 405', async () => {
    const response = await fetch(fixture.url + '/ping', { method: 'DELETE', headers: { authorization: 'Bearer fixture-token' } });
    expect(response.status).toBe(405);
  });

  it('answers /pipeline with one { result } or { error } per command', async () => {
    const answer = await post('/pipeline', [
      ['SET', 'wire:p', 'v'],
      ['INCR', 'wire:p'],
      ['GET', 'wire:p'],
    ]);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual([{ result: 'OK' }, { error: expect.stringMatching(/not an integer/) }, { result: 'v' }]);
    expect(fixture.stats).toMatchObject({ requests: 1, pipeline: 1, redisCommands: 3 });
  });

  it('runs /multi-exec atomically in MULTI/EXEC, and refuses a transaction with a malformed command', async () => {
    const answer = await post('/multi-exec', [
      ['SET', 'wire:m', '1'],
      ['INCR', 'wire:m'],
    ]);
    expect(answer).toEqual({ status: 200, json: [{ result: 'OK' }, { result: 2 }] });
    const aborted = await post('/multi-exec', [['SET', 'wire:m', '9'], ['SET']]);
    expect(aborted.status).toBe(400);
    expect((aborted.json as { error: string }).error).toMatch(/wrong number of arguments/);
    expect(await post('/', ['GET', 'wire:m'])).toEqual({ status: 200, json: { result: '2' } });
  });
});

describe('scripts with Upstash-only flags', () => {
  const script = `#!lua flags=allow-key-locking\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])`;

  it('plain Redis 7 refuses the allow-key-locking flag (why the fixture must translate it)', async () => {
    const direct = await RespConnection.open(redisServer.port);
    try {
      const reply = await direct.call(['EVAL', script, '1', 'flags:direct', '1']);
      expect(reply).toBeInstanceOf(ErrorReply);
      expect((reply as ErrorReply).message).toMatch(/Unexpected flag/);
    } finally {
      direct.close();
    }
  });

  it('accepts it through EVAL, EVALSHA with the digest of the text sent, SCRIPT LOAD and SCRIPT EXISTS', async () => {
    const sha = sha1Hex(script);
    const missing = await post('/', ['EVALSHA', sha, 1, 'flags:k', 1]);
    expect(missing.status).toBe(400);
    expect((missing.json as { error: string }).error).toMatch(/^NOSCRIPT/);
    expect(await post('/', ['EVAL', script, 1, 'flags:k', 2])).toEqual({ status: 200, json: { result: 2 } });
    expect(await post('/', ['EVALSHA', sha, 1, 'flags:k', 3])).toEqual({ status: 200, json: { result: 5 } });
    expect(await post('/', ['SCRIPT', 'EXISTS', sha, 'f'.repeat(40)])).toEqual({ status: 200, json: { result: [1, 0] } });
    const other = `#!lua flags=no-writes,allow-key-locking\nreturn redis.call('GET', KEYS[1])`;
    expect(await post('/', ['SCRIPT', 'LOAD', other])).toEqual({ status: 200, json: { result: sha1Hex(other) } });
    expect(await post('/', ['EVALSHA_RO', sha1Hex(other), 1, 'flags:k'])).toEqual({ status: 200, json: { result: '5' } });
  });

  it('allow-key-locking: a key not in KEYS fails (call raises, pcall returns the error); declared keys and keyless commands run', async () => {
    const flagged = (body: string) => `#!lua flags=allow-key-locking\n${body}`;
    const undeclared = await post('/', ['EVAL', flagged("return redis.call('SET', 'locking:other', ARGV[1])"), 1, 'locking:k', 'v']);
    expect(undeclared.status).toBe(400);
    expect((undeclared.json as { error: string }).error).toMatch(
      /^ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set/,
    );
    expect(await post('/', ['EXISTS', 'locking:other'])).toEqual({ status: 200, json: { result: 0 } });
    const caught = flagged("local reply = redis.pcall('GET', 'locking:other') return reply.err");
    expect(await post('/', ['EVAL', caught, 0])).toEqual({ status: 200, json: { result: UNDECLARED_KEY_ERROR } });
    // A later key of a multi-key command counts too (COMMAND GETKEYS positions).
    const mget = await post('/', ['EVAL', flagged("return redis.call('MGET', KEYS[1], 'locking:other')"), 1, 'locking:k']);
    expect((mget.json as { error: string }).error).toMatch(/^ERR Dynamic keys are not allowed/);
    // A command outside the guard's table is checked by Redis's own key positions (COMMAND GETKEYS).
    const copy = await post('/', ['EVAL', flagged("return redis.call('COPY', KEYS[1], 'locking:other')"), 1, 'locking:k']);
    expect((copy.json as { error: string }).error).toMatch(/^ERR Dynamic keys are not allowed/);
    const declared = flagged(
      "redis.call('SET', KEYS[1], ARGV[1]) redis.call('PUBLISH', KEYS[1], 'x') return redis.call('MGET', KEYS[1], KEYS[2])",
    );
    expect(await post('/', ['EVAL', declared, 2, 'locking:k', 'locking:j', 'v'])).toEqual({ status: 200, json: { result: ['v', null] } });
    // Without the flag, Upstash (and the fixture) let a script touch any key.
    expect(await post('/', ['EVAL', "return redis.call('SET', 'locking:other', 'w')", 0])).toEqual({ status: 200, json: { result: 'OK' } });
  });

  it("the stores' scripts run under that rule: limit and lease (their suites run on this fixture), and the config script flagged", async () => {
    const script = `#!lua flags=allow-key-locking\n${REPLACE_CONFIG_SCRIPT}`;
    expect(await post('/', ['EVAL', script, 1, 'locking:config', '0', '{"revision":1}'])).toEqual({ status: 200, json: { result: 1 } });
    for (const flagged of [UPSTASH_LIMIT_SCRIPT, UPSTASH_LEASE_SCRIPT])
      expect(flagged.split('\n')[0]).toBe('#!lua flags=allow-key-locking');
  });

  it('still refuses flags that Upstash does not know either', async () => {
    const answer = await post('/', ['EVAL', '#!lua flags=no-such-flag\nreturn 1', 0]);
    expect(answer.status).toBe(400);
  });
});

describe('the real @upstash/redis client over HTTP', () => {
  it('round-trips values through its default base64 encoding and auto-pipelining', async () => {
    const redis = new Redis({ url: fixture.url, token: 'fixture-token', enableTelemetry: false });
    await redis.set('client:a', 'ünïcode ✓');
    expect(await redis.get('client:a')).toBe('ünïcode ✓');
    await redis.set('client:json', { nested: [1, 2] });
    expect(await redis.get('client:json')).toEqual({ nested: [1, 2] });
    const [one, two] = await Promise.all([redis.incr('client:n'), redis.incr('client:n')]);
    expect([one, two].sort()).toEqual([1, 2]);
    expect(fixture.stats.pipeline).toBeGreaterThan(0); // auto-pipelining is on by default
  });

  it('sends single commands to / without auto-pipelining, and runs pipeline() and multi()', async () => {
    const redis = new Redis({ url: fixture.url, token: 'fixture-token', enableAutoPipelining: false, enableTelemetry: false });
    expect(await redis.ping()).toBe('PONG');
    expect(fixture.stats).toMatchObject({ requests: 1, command: 1, pipeline: 0 });
    const piped = await redis.pipeline().set('client:p', 1).incr('client:p').exec();
    expect(piped).toEqual(['OK', 2]);
    const multi = await redis.multi().incr('client:p').get('client:p').exec();
    expect(multi).toEqual([3, 3]);
    expect(fixture.stats).toMatchObject({ requests: 3, command: 1, pipeline: 1, multiExec: 1 });
  });

  it('surfaces a wrong token as an UpstashError saying WRONGPASS', async () => {
    const redis = new Redis({ url: fixture.url, token: 'wrong', enableAutoPipelining: false, enableTelemetry: false });
    await expect(redis.ping()).rejects.toThrow(/^WRONGPASS invalid or missing auth token/);
  });

  it('works with responseEncoding turned off', async () => {
    const redis = new Redis({ url: fixture.url, token: 'fixture-token', responseEncoding: false, enableTelemetry: false });
    await redis.set('client:plain', 'plain ✓');
    expect(await redis.get('client:plain')).toBe('plain ✓');
  });
});

describe('faults', () => {
  const client = () =>
    new Redis({ url: fixture.url, token: 'fixture-token', enableAutoPipelining: false, enableTelemetry: false, retry: false });

  it('hang: the request is counted and not answered until the fault is cleared, then gets a 503', async () => {
    fixture.setFault('hang');
    const pending = fetch(fixture.url + '/ping', { headers: { authorization: 'Bearer fixture-token' } });
    const outcome = await Promise.race([pending.then(() => 'answered'), new Promise((r) => setTimeout(() => r('still waiting'), 150))]);
    expect(outcome).toBe('still waiting');
    fixture.setFault(undefined);
    const released = await pending;
    expect(released.status).toBe(503);
    expect(await released.json()).toEqual({ error: expect.stringMatching(/released a hung request/) });
    expect(fixture.stats.requests).toBe(1);
  });

  it('status-500 and garbage make the real client throw', async () => {
    fixture.setFault('status-500');
    await expect(client().ping()).rejects.toThrow(/internal error/);
    fixture.setFault('garbage');
    await expect(client().ping()).rejects.toThrow(/Unable to parse response body/);
    fixture.setFault('reset');
    await expect(client().ping()).rejects.toThrow();
    fixture.setFault(undefined);
    expect(await client().ping()).toBe('PONG');
  });
});
