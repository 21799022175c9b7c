export interface FrontProxy {
  readonly url: string;
  close(): Promise<void>;
}

/** A local stand-in for Vercel's edge in front of `next start` (see front-proxy.mjs). */
export function startFrontProxy(options: { target: URL; port?: number; host?: string }): Promise<FrontProxy>;
