// The watcher's public shapes: its options, the warnings it reports and the handle it returns (watch-config.ts
// makes it, watcher.ts is the watcher).
import type { Duration } from '../shared/duration.js';
import type { LimiterConfig } from './document.js';

export interface WatchConfigOptions {
  /** How often the document is read; the pick-up time of a change where the source cannot push. @default '1s' */
  refresh?: Duration;
  /** Longest wait for one read before it counts as failed (the store is slow or gone). @default '2s' */
  timeout?: Duration;
  /**
   * Called with each problem: an unreadable store, a bad document or quota, a failed subscription. Repeats of
   * the same problem are reported once until a read succeeds. @default console.warn
   */
  onWarning?: (warning: ConfigWarning) => void;
}

export interface ConfigWarning {
  /** `read_failed`: the store did not answer (the last configuration stays); `document_lost`: the document applied
   * is gone without a tombstone (the last configuration stays); `invalid_document` / `invalid_quota` /
   * `invalid_deny_entry`: ignored; `subscribe_failed`: changes arrive by the periodic read only; `apply_failed`:
   * configure() refused it. */
  readonly code:
    'read_failed' | 'document_lost' | 'invalid_document' | 'invalid_quota' | 'invalid_deny_entry' | 'subscribe_failed' | 'apply_failed';
  readonly message: string;
  readonly cause?: unknown;
}

export interface ConfigWatcher {
  /** Settles (never rejects) once the first read is applied or has failed and the subscription is in place. */
  readonly ready: Promise<void>;
  /** The document applied now (kept when the store loses it); undefined while the code's configuration applies. */
  readonly config: LimiterConfig | undefined;
  /** Reads now (after a read in flight) and applies what it finds. Never rejects. */
  refresh(): Promise<void>;
  /** Stops reading and unsubscribes. The limiter keeps the configuration it has. */
  stop(): Promise<void>;
}
