/**
 * A local server that speaks the Upstash Redis REST protocol over a real redis-server, so the real
 * @upstash/redis client (and @upstash/ratelimit) can be tested over real HTTP with nothing mocked.
 *
 * Protocol, as Upstash documents it (REST API page) and as @upstash/redis uses it:
 * - `POST /` with a JSON array body `["SET","k","v"]`, or the path form `/set/k/v` (GET or POST; a POST body is
 *   appended as the last argument, query parameters other than `_token` after it).
 * - `POST /pipeline` and `POST /multi-exec` with a JSON array of commands; the answer is an array of
 *   `{ result }` or `{ error }`, one per command (multi-exec runs them in MULTI/EXEC).
 * - Auth: `Authorization: Bearer <token>` or `?_token=`; missing or wrong gives 401
 *   `{ "error": "WRONGPASS invalid or missing auth token" }` (Upstash's text, from its troubleshooting page).
 * - Every authorized answer carries an `upstash-sync-token` header, opaque as Upstash's (random, not a counter).
 * - `{ result }` with 200; a failing command gives 400 `{ error }`; methods other than HEAD, GET, POST, PUT give 405.
 * - `Upstash-Encoding: base64`: every string in the result is base64 encoded except the status reply "OK";
 *   numbers and null stay as they are (what @upstash/redis sends by default and decodes).
 * - A request body over 1 MB (MAX_REQUEST_BYTES) is refused with 400 `{ "error": "ERR max request size exceeded" }`
 *   (Upstash's error text, from its troubleshooting page; the status is what Upstash gives a failed command, not
 *   confirmed for this refusal), whatever the endpoint.
 * - Scripts carrying Upstash-only shebang flags (`#!lua flags=allow-key-locking`) are accepted, and a script with
 *   allow-key-locking that touches a key not in KEYS fails, as on Upstash: see upstash-script-flags.ts.
 *
 * For tests it counts requests and forwarded commands, and can be told to misbehave (hang, 500, garbage, reset).
 * Limits: one pipelined Redis connection (no blocking commands, no SUBSCRIBE); scripts still run one at a time
 * (key-based locking's rule is enforced, its parallelism is not modelled), and database-wide commands such as
 * FLUSHDB are not refused inside flagged scripts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { ErrorReply, RespConnection, StatusReply, type Reply } from './upstash-resp.js';
import { ScriptDigests } from './upstash-script-flags.js';

export interface UpstashFixtureOptions {
  /** Port of the redis-server the fixture forwards to. */
  redisPort: number;
  /** @default '127.0.0.1' */
  redisHost?: string;
  /** The bearer token clients must send. @default a random one */
  token?: string;
  /** @default 0 (a free port) */
  port?: number;
}

/**
 * How the fixture misbehaves, for fault tests: `hang` never answers (until the fault is cleared or the fixture
 * closes, when held requests get a 503); `status-500` answers 500 `{ error }`; `garbage` answers 200 with a body
 * that is not JSON; `reset` drops the connection without an answer (the client's own retries then resend).
 */
export type UpstashFault = 'hang' | 'status-500' | 'garbage' | 'reset';

export interface UpstashFixtureStats {
  /** HTTP requests received, refused ones included. */
  requests: number;
  /** Requests per endpoint: single command, /pipeline, /multi-exec. */
  command: number;
  pipeline: number;
  multiExec: number;
  /** Requests refused for a missing or wrong token. */
  unauthorized: number;
  /** Redis commands forwarded on behalf of clients (MULTI/EXEC wrappers not counted). */
  redisCommands: number;
  /** The same, per lower-case command name (`evalsha`, `eval`, ...). */
  byCommand: Record<string, number>;
  /** The `upstash-sync-token` request header of each authorized request, in order (null: none sent). */
  syncTokens: Array<string | null>;
}

const CONTROL_PREFIX = '/__fixture/';
/**
 * Upstash's request size limit, in bytes of request body: 1 MB for the free and pay-as-you-go plans by its
 * troubleshooting page (a later version says 10 MB; the stricter one is modelled).
 */
export const MAX_REQUEST_BYTES = 1_048_576;
/** Upstash's answer to a missing or wrong token (HTTP 401). */
export const UNAUTHORIZED = 'WRONGPASS invalid or missing auth token';
const FAULTS: readonly UpstashFault[] = ['hang', 'status-500', 'garbage', 'reset'];

type Command = string[];
type Prepared = { args: Command; after?: (reply: Reply) => Reply };

export class UpstashFixture {
  readonly url: string;
  readonly token: string;
  readonly stats: UpstashFixtureStats = zeroStats();
  private fault: UpstashFault | undefined;
  private readonly held = new Set<ServerResponse>();
  private readonly digests = new ScriptDigests();
  private reconnecting: Promise<RespConnection> | undefined;

  private constructor(
    private readonly server: Server,
    private redis: RespConnection,
    private readonly options: Required<UpstashFixtureOptions>,
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    this.token = options.token;
  }

  static async start(options: UpstashFixtureOptions): Promise<UpstashFixture> {
    const resolved = { redisHost: '127.0.0.1', token: randomBytes(16).toString('hex'), port: 0, ...options };
    const redis = await RespConnection.open(resolved.redisPort, resolved.redisHost);
    const server = createServer({ keepAliveTimeout: 30_000 });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(resolved.port, '127.0.0.1', () => resolve());
    });
    const fixture = new UpstashFixture(server, redis, resolved);
    server.on('request', (req, res) => {
      fixture.handle(req, res).catch((error: unknown) => {
        // A bug in the fixture must show up as a failing request, never as a hung test.
        if (!res.headersSent) send(res, 500, { error: `fixture error: ${String(error)}` });
        else res.destroy();
      });
    });
    return fixture;
  }

  /** Sets (or clears, with undefined) the fault mode. Leaving `hang` answers the held requests with a 503. */
  setFault(fault: UpstashFault | undefined): void {
    this.fault = fault;
    if (fault !== 'hang') this.releaseHeld();
  }

  resetStats(): void {
    Object.assign(this.stats, zeroStats());
  }

  async close(): Promise<void> {
    this.releaseHeld();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.redis.close();
  }

  /**
   * Answers the requests held by `hang` with a 503 rather than dropping them: a dropped connection makes
   * @upstash/redis resend the request (its retry on network errors), which would run it after the test moved on.
   */
  private releaseHeld(): void {
    for (const res of this.held) send(res, 503, { error: 'ERR the fixture released a hung request' });
    this.held.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fixture');
    if (url.pathname.startsWith(CONTROL_PREFIX)) return this.control(req, res, url, await readBody(req));
    this.stats.requests++;
    const body = await readBody(req);
    if (this.fault !== undefined) return this.misbehave(res);
    const method = req.method ?? 'GET';
    if (!['HEAD', 'GET', 'POST', 'PUT'].includes(method)) return send(res, 405, { error: 'Method Not Allowed' });
    if (body.length > MAX_REQUEST_BYTES) return send(res, 400, { error: 'ERR max request size exceeded' });
    if (!this.authorized(req, url)) {
      this.stats.unauthorized++;
      return send(res, 401, { error: UNAUTHORIZED });
    }
    const base64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';
    const sentToken = req.headers['upstash-sync-token'];
    this.stats.syncTokens.push(typeof sentToken === 'string' ? sentToken : null);
    res.setHeader('upstash-sync-token', randomBytes(12).toString('base64url'));
    if (url.pathname === '/pipeline' || url.pathname === '/multi-exec') {
      const commands = parseCommandList(body);
      if (typeof commands === 'string') return send(res, 400, { error: commands });
      if (url.pathname === '/pipeline') {
        this.stats.pipeline++;
        return send(res, 200, await this.pipeline(commands, base64));
      }
      this.stats.multiExec++;
      const answer = await this.multiExec(commands, base64);
      return send(res, 'error' in answer ? 400 : 200, 'error' in answer ? answer : answer.results);
    }
    const command = url.pathname === '/' ? parseCommand(parseJson(body)) : pathCommand(url, body);
    if (typeof command === 'string') return send(res, 400, { error: command });
    this.stats.command++;
    const [reply] = await this.execute([this.prepare(command)]);
    if (reply instanceof ErrorReply) return send(res, 400, { error: reply.message });
    return send(res, 200, { result: toJson(reply!, base64) }, method === 'HEAD');
  }

  /**
   * Test-only control API, for tests that cannot reach this object (workers, the edge-runtime environment):
   * `GET /__fixture/stats`, `POST /__fixture/reset` (zero the stats, clear the fault),
   * `POST /__fixture/fault` with `{ "fault": "hang" | "status-500" | "garbage" | "reset" | null }`.
   * Same bearer token; never counted, never subject to the fault mode.
   */
  private control(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer): void {
    if (!this.authorized(req, url)) return send(res, 401, { error: UNAUTHORIZED });
    const action = url.pathname.slice(CONTROL_PREFIX.length);
    if (action === 'stats') return send(res, 200, this.stats);
    if (action === 'reset' && req.method === 'POST') {
      this.resetStats();
      this.setFault(undefined);
      return send(res, 200, this.stats);
    }
    if (action === 'fault' && req.method === 'POST') {
      const fault = (parseJson(body) as { fault?: unknown } | undefined)?.fault ?? null;
      if (fault !== null && !FAULTS.includes(fault as UpstashFault)) {
        return send(res, 400, { error: `fault must be one of ${FAULTS.join(', ')} or null, got ${JSON.stringify(fault)}` });
      }
      this.setFault((fault ?? undefined) as UpstashFault | undefined);
      return send(res, 200, { fault });
    }
    return send(res, 404, { error: `unknown control action ${JSON.stringify(action)}` });
  }

  private misbehave(res: ServerResponse): void {
    switch (this.fault) {
      case 'hang':
        this.held.add(res);
        res.on('close', () => this.held.delete(res));
        return;
      case 'status-500':
        return send(res, 500, { error: 'ERR internal error (fixture fault)' });
      case 'garbage':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>502 Bad Gateway: upstream sent garbage</body></html>');
        return;
      case 'reset':
        res.destroy();
        return;
    }
  }

  private authorized(req: IncomingMessage, url: URL): boolean {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const presented = match?.[1] ?? url.searchParams.get('_token') ?? '';
    return presented === this.token;
  }

  private async pipeline(commands: Command[], base64: boolean): Promise<unknown[]> {
    const replies = await this.execute(commands.map((c) => this.prepare(c)));
    return replies.map((reply) => entry(reply, base64));
  }

  private async multiExec(commands: Command[], base64: boolean): Promise<{ results: unknown[] } | { error: string }> {
    const prepared = commands.map((c) => this.prepare(c));
    const replies = await this.execute(prepared, true);
    const queued = replies.slice(1, -1).find((r) => r instanceof ErrorReply) as ErrorReply | undefined;
    if (queued !== undefined) return { error: queued.message };
    const exec = replies[replies.length - 1]!;
    if (exec instanceof ErrorReply) return { error: exec.message };
    if (!Array.isArray(exec)) return { error: 'EXECABORT Transaction discarded' };
    return { results: exec.map((reply, i) => entry(prepared[i]!.after?.(reply) ?? reply, base64)) };
  }

  /**
   * Sends prepared commands in one write and returns their replies, post-processed. With `transaction`, they are
   * wrapped in MULTI/EXEC (the wrappers are not counted) and the raw replies of MULTI, queueing and EXEC return.
   */
  private async execute(prepared: Prepared[], transaction = false): Promise<Reply[]> {
    this.stats.redisCommands += prepared.length;
    for (const { args } of prepared) {
      const name = args[0]!.toLowerCase();
      this.stats.byCommand[name] = (this.stats.byCommand[name] ?? 0) + 1;
    }
    const redis = await this.connection();
    const commands = prepared.map((p) => p.args);
    if (transaction) return redis.callMany([['MULTI'], ...commands, ['EXEC']]);
    const replies = await redis.callMany(commands);
    return replies.map((reply, i) => prepared[i]!.after?.(reply) ?? reply);
  }

  /** The Redis connection, reopened once (shared by concurrent requests) after redis-server went away. */
  private connection(): Promise<RespConnection> {
    if (!this.redis.closed) return Promise.resolve(this.redis);
    this.reconnecting ??= RespConnection.open(this.options.redisPort, this.options.redisHost).then(
      (redis) => {
        this.redis = redis;
        this.reconnecting = undefined;
        return redis;
      },
      (error: unknown) => {
        this.reconnecting = undefined;
        throw error;
      },
    );
    return this.reconnecting;
  }

  /** Applies Upstash's script semantics on top of Redis: see upstash-script-flags.ts. */
  private prepare(command: Command): Prepared {
    const name = command[0]!.toLowerCase();
    if ((name === 'eval' || name === 'eval_ro') && command.length > 1) {
      return { args: [command[0]!, this.digests.admit(command[1]!).redisScript, ...command.slice(2)] };
    }
    if ((name === 'evalsha' || name === 'evalsha_ro') && command.length > 1) {
      return { args: [command[0]!, this.digests.redisSha(command[1]!), ...command.slice(2)] };
    }
    if (name === 'script' && command.length > 1) {
      const sub = command[1]!.toLowerCase();
      if (sub === 'load' && command.length === 3) {
        const { redisScript, clientSha } = this.digests.admit(command[2]!);
        return { args: ['SCRIPT', 'LOAD', redisScript], after: (r) => (r instanceof ErrorReply ? r : Buffer.from(clientSha)) };
      }
      if (sub === 'exists') return { args: ['SCRIPT', 'EXISTS', ...command.slice(2).map((sha) => this.digests.redisSha(sha))] };
      if (sub === 'flush') this.digests.clear();
    }
    return { args: command };
  }
}

export function startUpstashFixture(options: UpstashFixtureOptions): Promise<UpstashFixture> {
  return UpstashFixture.start(options);
}

function zeroStats(): UpstashFixtureStats {
  return { requests: 0, command: 0, pipeline: 0, multiExec: 0, unauthorized: 0, redisCommands: 0, byCommand: {}, syncTokens: [] };
}

function entry(reply: Reply, base64: boolean): unknown {
  return reply instanceof ErrorReply ? { error: reply.message } : { result: toJson(reply, base64) };
}

/** Renders a Redis reply as Upstash does; with base64, every string but the status "OK" is encoded. */
function toJson(reply: Reply, base64: boolean): unknown {
  if (reply === null || typeof reply === 'number') return reply;
  if (Buffer.isBuffer(reply)) return base64 ? reply.toString('base64') : reply.toString('utf8');
  if (reply instanceof StatusReply) {
    return base64 && reply.value !== 'OK' ? Buffer.from(reply.value).toString('base64') : reply.value;
  }
  if (reply instanceof ErrorReply) return reply.message; // an error nested in an array (a script's table)
  return reply.map((item) => toJson(item, base64));
}

function send(res: ServerResponse, status: number, payload: unknown, headOnly = false): void {
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(headOnly ? undefined : text);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const PARSE_ERROR = 'ERR failed to parse the request body: expected a JSON array of command arguments';

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A command from a JSON array; a string is the error to answer with. */
function parseCommand(value: unknown): Command | string {
  if (!Array.isArray(value) || value.length === 0) return PARSE_ERROR;
  const args: string[] = [];
  for (const arg of value) {
    if (typeof arg === 'string') args.push(arg);
    else if (typeof arg === 'number' || typeof arg === 'boolean') args.push(String(arg));
    else return `ERR unsupported argument type in command: ${JSON.stringify(arg)}`;
  }
  return args;
}

function parseCommandList(body: Buffer): Command[] | string {
  const value = parseJson(body);
  if (!Array.isArray(value) || value.length === 0) {
    return 'ERR failed to parse the request body: expected a JSON array of commands';
  }
  const commands: Command[] = [];
  for (const item of value) {
    const command = parseCommand(item);
    if (typeof command === 'string') return command;
    commands.push(command);
  }
  return commands;
}

/** `/set/foo/bar?EX=100` with an optional raw body appended as the last argument before the query parameters. */
function pathCommand(url: URL, body: Buffer): Command | string {
  const segments = url.pathname
    .split('/')
    .slice(1)
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
  if (segments.length === 0) return PARSE_ERROR;
  if (body.length > 0) segments.push(body.toString('utf8'));
  for (const [key, value] of url.searchParams) {
    if (key === '_token') continue;
    segments.push(key);
    if (value !== '') segments.push(value);
  }
  return segments;
}
