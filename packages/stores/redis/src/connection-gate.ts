import { SluiceError } from '@sluice/core';
import { unref } from '@sluice/core/internal';
import type { StoreClient } from './clients/contract.js';

/**
 * Keeps the store's commands out of the client's offline queue. With ioredis's and node-redis's defaults a command
 * issued while the client is not connected waits in that queue and runs whenever the connection comes back, minutes
 * later if need be; by then the limiter's deadline has long answered the decision by its failure policy, so the
 * late run would spend budget for a decision that was already made.
 *
 * The gate sends at once when the client is `ready` (or when a command cannot wait anyway: offline queue off,
 * client closed, or a client with no offline queue at all, like Valkey GLIDE, whose own `requestTimeout` bounds a
 * request's wait). Otherwise it holds the command itself, for at most `waitMs` from the moment it was issued, and
 * sends it when the client becomes ready within that time; past it the command is never sent and fails with a
 * STORE_ERROR, which the limiter's failure policy answers. With `waitMs` at most the limiter's `timeout`, a held
 * command is sent only while its decision is still waiting for it. A client built with `lazyConnect` is connected
 * by the gate, as ioredis's own first command would.
 *
 * Not covered: a command already written to the socket when the connection drops is the client's business
 * (ioredis resends it on reconnect unless `autoResendUnfulfilledCommands: false`); so is a Cluster node's own
 * connection while the Cluster as a whole reports `ready`.
 */
interface Held {
  readonly since: number;
  readonly send: () => void;
  readonly reject: (error: unknown) => void;
}

export class ConnectionGate {
  /** Held commands in the order they were issued (so, with one `waitMs`, in the order they expire). */
  private held: Held[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Stops listening to the client's state changes; set while commands are held. */
  private unlisten: (() => void) | undefined;

  constructor(
    private readonly client: StoreClient,
    private readonly waitMs: number,
  ) {}

  /** Runs `send` now when the client can take it without queueing; otherwise when it is ready, within waitMs. */
  run<T>(send: () => Promise<T>): Promise<T> {
    if (this.open()) return send();
    const state = this.client.state();
    if (this.waitMs === 0) return Promise.reject(notReady(state, 0));
    return new Promise<T>((resolve, reject) => {
      this.held.push({ since: Date.now(), send: () => send().then(resolve, reject), reject });
      this.unlisten ??= this.client.onStateChange(this.release);
      this.arm();
      if (state === 'connecting') this.client.connect(); // lazyConnect
    });
  }

  /** True when a command sent now goes to the socket or fails at once: it can never wait in the offline queue. */
  private open(): boolean {
    const state = this.client.state();
    return state === 'ready' || state === 'closed' || !this.client.queuesOffline();
  }

  /** Sends what is still within its wait once the client can take it; fails what has waited too long. */
  private readonly release = (): void => {
    const now = Date.now();
    const open = this.open();
    const keep: Held[] = [];
    for (const command of this.held) {
      if (now - command.since >= this.waitMs) command.reject(notReady(this.client.state(), this.waitMs));
      else if (open) command.send();
      else keep.push(command);
    }
    this.held = keep;
    if (keep.length > 0) {
      this.arm();
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.unlisten?.();
    this.unlisten = undefined;
  };

  /** One timer, for the oldest held command's wait; unref'd, so it never keeps a process alive. */
  private arm(): void {
    if (this.timer !== undefined || this.held.length === 0) return;
    const delay = Math.max(0, this.held[0]!.since + this.waitMs - Date.now());
    this.timer = unref(
      setTimeout(() => {
        this.timer = undefined;
        this.release();
      }, delay),
    );
  }
}

function notReady(state: string, waitMs: number): SluiceError {
  return new SluiceError(
    'STORE_ERROR',
    `redisStore: the Redis client was not connected (${state}) within offlineWait (${waitMs} ms); the decision was not sent and will never count`,
  );
}
