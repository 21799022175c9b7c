/**
 * The little of a request that sluice reads, in a shape every runtime can give: web `Headers` (fetch, edge,
 * Next.js) or Node's lower-cased header object (Express, Fastify), plus the TCP peer address where the runtime
 * exposes one.
 */

/** Web `Headers`, or Node's `IncomingHttpHeaders` (lower-case names, repeated headers as arrays). */
export type HeaderBag = { get(name: string): string | null } | { readonly [name: string]: string | readonly string[] | undefined };

export interface HttpRequest {
  readonly headers: HeaderBag;
  /**
   * The TCP peer's address as the runtime reports it (`req.socket.remoteAddress` in Node). It cannot be spoofed
   * by the client, which makes it the only address trusted by default. Undefined where the runtime hides it.
   */
  readonly remoteAddress?: string | undefined;
  /**
   * The connection was reset or closed before its peer address could be read (`remoteAddress` is then
   * undefined): the address is lost, not absent. Unless `identify` names the client, such a request is refused as
   * `unidentified` whatever `onMissingIdentity` says, and counted nowhere, so a client cannot reach an unlimited
   * route by resetting its connection. Node adapters set it with `addressLost(socket)`.
   */
  readonly connectionLost?: boolean | undefined;
  readonly method?: string | undefined;
  readonly url?: string | undefined;
}

/** One header's value; repeated headers are joined with `, ` as HTTP list syntax defines. `name` is lower-case. */
export function readHeader(headers: HeaderBag, name: string): string | undefined {
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') {
    const value = (headers as { get(name: string): string | null }).get(name);
    return value === null ? undefined : value;
  }
  const value = (headers as { readonly [name: string]: string | readonly string[] | undefined })[name];
  if (value === undefined || typeof value === 'string') return value;
  return Array.isArray(value) ? value.join(', ') : undefined;
}

/** The little of a Node `net.Socket` that `addressLost` reads (structural: this package imports no Node module). */
export interface SocketLike {
  readonly remoteAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly destroyed?: boolean | undefined;
}

/**
 * Whether a socket whose `remoteAddress` is undefined lost it: it was destroyed, or it is a TCP socket (it has a
 * local port) whose peer already reset, so the kernel no longer reports the peer. A Unix-socket connection has
 * neither and no peer address to lose.
 */
export function addressLost(socket: SocketLike | null | undefined): boolean {
  if (socket === undefined || socket === null || socket.remoteAddress !== undefined) return false;
  return socket.destroyed === true || socket.localPort !== undefined;
}
