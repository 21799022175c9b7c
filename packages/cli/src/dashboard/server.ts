/**
 * The dashboard's HTTP server (node:http): one self-contained page and a small JSON API over a FleetView.
 *
 * Security model:
 * - Bound to 127.0.0.1 unless told otherwise; any other host requires a token (the command makes one if none is
 *   given). With a token every request, the page included, must carry it: `?token=`, `Authorization: Bearer`, or
 *   `X-Sluice-Token`; it is compared in constant time (SHA-256 digests through timingSafeEqual).
 * - Changes (POST) are guarded against cross-site requests whatever the host: each must carry `X-Sluice-Token`
 *   equal to the token, or on loopback without a token a random secret made at start and embedded in the page; a
 *   custom header cannot be sent cross-origin without a CORS preflight, which this server never grants. An
 *   `Origin` header, when sent, must be this server's own, and the body must be `application/json`.
 * - Without a token, the Host header must name the loopback address itself (127.0.0.1, localhost, [::1]), so a
 *   DNS-rebinding page cannot read the page and its secret.
 * - Responses forbid framing and caching, and the page runs under a Content-Security-Policy with a nonce.
 * A store that fails answers 503 with its message; a handler never lets a rejection escape.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isSluiceError } from '@sluice/core';
import { messageOf } from '../commands/config-connection.js';
import type { FleetView } from './fleet-view.js';
import { renderPage } from './page.js';

export interface DashboardServerOptions {
  view: FleetView;
  host: string;
  /** 0: a free port. */
  port: number;
  /** Required on every request when set. */
  token?: string | undefined;
  /** Where the store is, shown on the page. */
  where: string;
  /** Why the store cannot answer now (a lost connection), said instead of the client's own message; undefined when it can. */
  storeDown?: (error: unknown) => string | undefined;
}

export interface DashboardServer {
  /** The page's URL, with `?token=` when there is one. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Largest body a POST may have: an action is a few hundred bytes, a quota's rules a few kilobytes. */
const MAX_BODY_BYTES = 64 * 1024;
/** Most names the page may add by hand. */
const MAX_EXTRA_NAMES = 50;

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Equal strings, in time that does not depend on where they differ (digests, so lengths leak nothing either). */
function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export async function startDashboardServer(options: DashboardServerOptions): Promise<DashboardServer> {
  const { view, host, token, where } = options;
  const failure = (error: unknown) => options.storeDown?.(error) ?? messageOf(error);
  // The secret a POST must carry: the token, or one made now and embedded in the page.
  const secret = token ?? randomBytes(24).toString('base64url');
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // Only a bug reaches here (handle answers every failure it expects); answer it, never crash.
      if (!response.headersSent) send(response, 500, { error: `the dashboard failed: ${messageOf(error)}` });
      else response.destroy();
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://dashboard.invalid');
    if (token === undefined && !hostIsLoopback(request.headers.host)) {
      return send(response, 421, { error: 'this dashboard answers to its loopback address only (Host header)' });
    }
    if (token !== undefined && !sameSecret(tokenOf(request, url), token)) {
      return send(response, 401, { error: 'a token is required: open the URL the dashboard printed (with ?token=)' });
    }
    if (request.method === 'GET' && url.pathname === '/') {
      const nonce = randomBytes(16).toString('base64');
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      });
      response.end(renderPage({ nonce, secret, where }));
      return;
    }
    if (request.method === 'GET' && url.pathname === '/api/state') {
      const names = (url.searchParams.get('names') ?? '')
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name.length > 0)
        .slice(0, MAX_EXTRA_NAMES);
      try {
        return send(response, 200, await view.state(names));
      } catch (error) {
        return send(response, 503, { error: `the store did not answer: ${failure(error)}` });
      }
    }
    if (url.pathname === '/api/action') {
      if (request.method !== 'POST') return send(response, 405, { error: 'POST an action' }, { allow: 'POST' });
      const refusal = refuseCrossSite(request);
      if (refusal !== undefined) return send(response, 403, { error: refusal });
      let body: unknown;
      try {
        body = JSON.parse(await readBody(request));
      } catch (error) {
        return send(response, 400, { error: `the body must be a JSON object: ${messageOf(error)}` });
      }
      try {
        return send(response, 200, { config: await view.act(body) });
      } catch (error) {
        if (isSluiceError(error) && (error.code === 'INVALID_OPTION' || error.code === 'UNKNOWN_OPTION')) {
          return send(response, 400, { error: error.detail });
        }
        return send(response, 503, { error: `the store did not answer, nothing was written: ${failure(error)}` });
      }
    }
    return send(response, 404, { error: 'not found: the page is at /, the API at /api/state and /api/action' });
  }

  function refuseCrossSite(request: IncomingMessage): string | undefined {
    if (!sameSecret(header(request, 'x-sluice-token'), secret)) return 'a change must carry the X-Sluice-Token header the page sends';
    const origin = header(request, 'origin');
    if (origin !== undefined && origin !== `http://${request.headers.host}`) return `a change from another origin (${origin}) is refused`;
    if (!(header(request, 'content-type') ?? '').startsWith('application/json')) return 'a change must be sent as application/json';
    return undefined;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const url = `http://${shown}:${port}/${token === undefined ? '' : `?token=${encodeURIComponent(token)}`}`;
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(JSON.stringify(body));
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function tokenOf(request: IncomingMessage, url: URL): string | undefined {
  const bearer = /^Bearer (.+)$/i.exec(header(request, 'authorization') ?? '')?.[1];
  return header(request, 'x-sluice-token') ?? bearer ?? url.searchParams.get('token') ?? undefined;
}

function hostIsLoopback(hostHeader: string | undefined): boolean {
  if (hostHeader === undefined) return false;
  const host = hostHeader.startsWith('[') ? hostHeader.slice(0, hostHeader.indexOf(']') + 1) : hostHeader.replace(/:\d+$/, '');
  return isLoopback(host);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`the body is larger than ${MAX_BODY_BYTES} bytes`));
        request.destroy();
      } else chunks.push(chunk);
    });
    request.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.once('error', reject);
  });
}
