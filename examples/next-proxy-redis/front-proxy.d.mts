export interface FrontProxy {
  readonly url: string;
  close(): Promise<void>;
}

/** A local stand-in for a reverse proxy that appends to X-Forwarded-For (see front-proxy.mjs). */
export function startFrontProxy(options: { target: URL; port?: number; host?: string }): Promise<FrontProxy>;
