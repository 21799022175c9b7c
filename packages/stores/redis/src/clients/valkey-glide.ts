import { flatArguments, hasMethod, type CommandArguments, type StoreClient } from './contract.js';

/** The members that mark a Valkey GLIDE client (`GlideClient` of `@valkey/valkey-glide` 2). */
export interface GlideLike {
  customCommand: (...args: never[]) => unknown;
  invokeScript: (...args: never[]) => unknown;
}

interface GlideClient {
  customCommand(args: string[], options?: { decoder?: number }): Promise<unknown>;
}

/** GLIDE: `customCommand` and `invokeScript`, its own names, which no other client uses. */
export function isGlide(value: object): value is GlideLike {
  return hasMethod(value, 'customCommand') && hasMethod(value, 'invokeScript');
}

/** A `GlideClusterClient`: the only GLIDE client with routed calls (`fcallWithRoute`). Not supported yet. */
export function isGlideCluster(value: object): boolean {
  return isGlide(value) && hasMethod(value, 'fcallWithRoute');
}

/** GLIDE's `Decoder.String` (its enum is `Bytes = 0, String = 1`): replies as strings whatever the client's default. */
const STRINGS = { decoder: 1 };

/**
 * A GLIDE client has no offline queue the store could leak a decision into, and publishes no connection state:
 * while it reconnects a request waits at most the client's `requestTimeout` (250 ms by default) and then fails
 * with a TimeoutError, never written later (measured: a request issued while the server was down, the server back
 * after the timeout, never ran). So the state reads `ready` and commands go straight to it; the guarantee that
 * an answered decision never counts later holds while `requestTimeout` is at most the limiters' `timeout`.
 */
export function glideClient(client: GlideLike): StoreClient {
  const glide = client as unknown as GlideClient;
  return {
    library: 'valkey-glide',
    cluster: false,
    send: (name: string, args: CommandArguments) =>
      glide.customCommand(flatArguments(name, args), STRINGS).catch((error: unknown) => {
        throw serverError(error);
      }),
    state: () => 'ready',
    queuesOffline: () => false,
    onStateChange: () => () => undefined,
    connect: () => undefined,
  };
}

/**
 * GLIDE words a server's error its own way (`An error was signalled by the server: - NoScriptError: No matching
 * script...`, `... - ResponseError: Function not found`): the error is given back its Redis code first, as the
 * contract promises (`NOSCRIPT No matching script...`, `ERR Function not found`), with GLIDE's error as its cause.
 * Any other error (a timeout, a closed client) is passed on as it is.
 */
function serverError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const match = /signalled by the server: - (\w+): ([\s\S]*)$/.exec(error.message);
  if (match === null) return error;
  const code = CODES[match[1]!] ?? match[1]!;
  const wrapped = new Error(`${code} ${match[2]!}`, { cause: error });
  wrapped.name = error.name;
  return wrapped;
}

/** The error kinds GLIDE's core (redis-rs) names, as the codes Redis sent; others keep the name they came with. */
const CODES: Record<string, string> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  NotBusy: 'NOTBUSY',
};
