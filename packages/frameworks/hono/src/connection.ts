import { addressLost, type SocketLike } from '@sluice/http/adapter';
import type { Context } from 'hono';

/** The TCP peer of a request, as far as the runtime tells it. */
export interface Connection {
  readonly remoteAddress: string | undefined;
  readonly connectionLost: boolean;
}

const NONE: Connection = { remoteAddress: undefined, connectionLost: false };

/**
 * The socket address, read from what each runtime's server hands Hono as `c.env` (what Hono's own `getConnInfo`
 * helpers read), without importing any of them, so the package stays edge-safe:
 * - Node (`@hono/node-server`): `c.env.incoming.socket`, an `IncomingMessage`'s socket;
 * - Bun (`Bun.serve({ fetch: app.fetch })`): `c.env.requestIP(request)`, or `c.env.server.requestIP`;
 * - Deno (`Deno.serve(app.fetch)`): `c.env.remoteAddr.hostname`.
 * Cloudflare Workers expose no socket: there the address comes only from a trusted header
 * (`clientIp: { platform: 'cloudflare' }`, CF-Connecting-IP).
 */
export function connectionOf(c: Context): Connection {
  const env = c.env as Record<string, unknown> | undefined;
  if (typeof env !== 'object' || env === null) return NONE;
  const incoming = env.incoming as { socket?: SocketLike | null } | undefined;
  if (typeof incoming === 'object' && incoming !== null && typeof incoming.socket === 'object') {
    const socket = incoming.socket;
    const remoteAddress = socket?.remoteAddress;
    // A client that reset its connection has no address any more: refused, never "unidentified" and let through.
    return { remoteAddress, connectionLost: remoteAddress === undefined && addressLost(socket) };
  }
  const server = (typeof (env.server as { requestIP?: unknown } | undefined)?.requestIP === 'function' ? env.server : env) as {
    requestIP?: (request: Request) => { address?: string } | null;
  };
  if (typeof server.requestIP === 'function') {
    const address = server.requestIP(c.req.raw)?.address;
    return { remoteAddress: typeof address === 'string' ? address : undefined, connectionLost: false };
  }
  const remoteAddr = env.remoteAddr as { hostname?: unknown; transport?: unknown } | undefined;
  if (typeof remoteAddr === 'object' && remoteAddr !== null && typeof remoteAddr.hostname === 'string' && remoteAddr.transport !== 'unix') {
    return { remoteAddress: remoteAddr.hostname, connectionLost: false };
  }
  return NONE;
}
