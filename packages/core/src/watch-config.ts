/**
 * Keeps a limiter on the configuration stored under its name (config-document.ts). Decisions never touch the store
 * for it: the watcher reads the document at start, every `refresh`, and at once when the source pushes a change,
 * and applies it with `limiter.configure()`. So a change reaches an instance within the push latency where the
 * source subscribes (Redis pub/sub, memory), and within `refresh` plus one read where it does not (Upstash,
 * SQLite), or when a push is lost (a subscriber reconnecting).
 *
 * What a reader may rely on, none of it throwing into the application:
 * - a store that cannot be read keeps the last configuration applied (a warning says why);
 * - a document that is not valid is ignored whole, and one bad quota is ignored alone (that identity keeps its
 *   last good quota, or the limiter's rules): a bad rule in the store never switches limiting off;
 * - a bad deny entry is dropped alone (one warning per document revision names them); the rest of the list applies;
 * - a document without `rules` (or `mode`, `deny`, `denyMode`) keeps the code's; a document deleted on purpose (a
 *   tombstone, written by deleteLimiterConfig and `sluice config clear`) returns to the code's configuration;
 * - a document that is gone without a tombstone (a store restarted empty, a key evicted or deleted by hand) keeps
 *   the last configuration applied, deny list included, with one `document_lost` warning: a restart of the store
 *   must not un-deny every client or lift every quota;
 * - reads run one at a time, in order, so an older read never overwrites a newer one.
 */
import { durationOption, type Duration, type DurationRange } from './duration.js';
import { describe } from './describe.js';
import { SluiceError, isSluiceError } from './errors.js';
import type { DenyMode, Limiter, LimiterMode } from './limiter-api.js';
import { isPromiseLike } from './promise.js';
import { compileLimiterConfig, type LimiterConfig } from './config-document.js';
import type { ConfigSource, Unsubscribe } from './config-source.js';
import type { DenyEntry } from './deny-entries.js';
import type { Rule } from './rules.js';
import { optionalFunction, rejectUnknownOptions } from './validate.js';

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

/** setInterval exists wherever sluice runs; core compiles without DOM or Node typings. */
const timers = globalThis as unknown as {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  console?: { warn(...values: unknown[]): void };
};

const REFRESH_RANGE: DurationRange = { min: 10, max: 2 ** 31 - 1 };
const TIMEOUT_RANGE: DurationRange = { min: 1, max: 2 ** 31 - 1 };

/**
 * Applies the configuration stored under `limiter.name` in `source` to the limiter, and keeps it current.
 * @example
 * const watcher = watchConfig(limiter, redisConfigSource(redis));
 * await watcher.ready; // optional: the first read has been applied
 */
export function watchConfig(limiter: Limiter, source: ConfigSource, options: WatchConfigOptions = {}): ConfigWatcher {
  if (typeof limiter !== 'object' || limiter === null || typeof (limiter as Partial<Limiter>).configure !== 'function') {
    throw new SluiceError('INVALID_OPTION', `watchConfig: limiter must be a limiter made by createLimiter(), got ${describe(limiter)}`);
  }
  const candidate = source as Partial<ConfigSource> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.read !== 'function' ||
    typeof candidate.write !== 'function'
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `watchConfig: source must be a config source such as redisConfigSource(redis) or memoryConfigSource(), got ${describe(source)}`,
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `watchConfig: options must be an object, got ${describe(options)}`);
  }
  rejectUnknownOptions(options, ['refresh', 'timeout', 'onWarning'], 'watchConfig');
  const refreshMs = durationOption(options.refresh ?? '1s', 'watchConfig: refresh', REFRESH_RANGE);
  const timeoutMs = durationOption(options.timeout ?? '2s', 'watchConfig: timeout', TIMEOUT_RANGE);
  const onWarning = optionalFunction(options.onWarning, 'watchConfig: onWarning', '(warning) => void') ?? defaultWarning;
  return new Watcher(limiter, source, refreshMs, timeoutMs, onWarning);
}

/** What the watcher gives `configure()`: every field, so that what a document leaves out returns to the code's. */
interface Configuration {
  readonly rules: readonly Rule[];
  readonly mode: LimiterMode;
  readonly quotas: ReadonlyMap<string, readonly Rule[]>;
  readonly deny: readonly DenyEntry[];
  readonly denyMode: DenyMode;
}

class Watcher implements ConfigWatcher {
  readonly ready: Promise<void>;
  private applied: LimiterConfig | undefined = undefined;
  /** The code's configuration, taken at start: what a missing field, or a deleted document, returns to. */
  private readonly code: Configuration;
  /** The text last handled (applied, or ignored as bad): the same text again is not handled twice. `null`: none read yet. */
  private lastText: string | undefined | null = null;
  /** Each identity's last good quota, kept when a later document holds a bad one. */
  private goodQuotas: ReadonlyMap<string, readonly Rule[]> = new Map();
  private lastWarning: string | undefined = undefined;
  private wanted = false;
  private running: Promise<void> | undefined = undefined;
  private stopped = false;
  private readonly interval: unknown;
  private unsubscribe: Unsubscribe | undefined = undefined;

  constructor(
    private readonly limiter: Limiter,
    private readonly source: ConfigSource,
    refreshMs: number,
    private readonly timeoutMs: number,
    private readonly onWarning: (warning: ConfigWarning) => void,
  ) {
    // `denyMode` may be absent on a Limiter implemented outside core, written before the deny list had a mode.
    const denyMode = limiter.denyMode ?? 'enforce';
    this.code = { rules: limiter.rules, mode: limiter.mode, quotas: limiter.quotas, deny: limiter.deny, denyMode };
    this.interval = timers.setInterval(() => void this.refresh(), refreshMs);
    unref(this.interval);
    // A subscription that takes longer than a read may (a store still connecting) goes on in the background:
    // `ready` does not wait for it past `timeout`, and the periodic read covers the time until it is in place.
    this.ready = Promise.all([this.refresh(), Promise.race([this.subscribe(), delay(timeoutMs)])]).then(() => undefined);
  }

  get config(): LimiterConfig | undefined {
    return this.applied;
  }

  /** Reads are serialised: a request during a read asks for one more read after it, never a parallel one. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.wanted = true;
    this.running ??= this.loop().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    timers.clearInterval(this.interval);
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    if (unsubscribe !== undefined)
      await settle(
        () => unsubscribe(),
        (error) => this.warn('subscribe_failed', `could not unsubscribe (${messageOf(error)})`, error),
      );
  }

  private async loop(): Promise<void> {
    while (this.wanted && !this.stopped) {
      this.wanted = false;
      await this.readOnce();
    }
  }

  private async subscribe(): Promise<void> {
    if (typeof this.source.subscribe !== 'function') return;
    await settle(
      async () => {
        const unsubscribe = await this.source.subscribe!(this.limiter.name, () => void this.refresh());
        if (typeof unsubscribe !== 'function') return;
        if (this.stopped) await unsubscribe();
        else this.unsubscribe = unsubscribe;
      },
      (error) =>
        this.warn(
          'subscribe_failed',
          `could not subscribe to changes (${messageOf(error)}); changes arrive by the periodic read only`,
          error,
        ),
    );
  }

  private async readOnce(): Promise<void> {
    let text: unknown;
    try {
      text = await withTimeout(() => this.source.read(this.limiter.name), this.timeoutMs);
    } catch (error) {
      this.warn('read_failed', `the store could not be read (${messageOf(error)}); keeping the last known configuration`, error);
      return;
    }
    if (this.stopped) return;
    this.lastWarning = undefined; // the store answered: the next problem is news again
    if (text === null) text = undefined;
    if (text !== undefined && typeof text !== 'string') {
      this.warn('invalid_document', `the store returned ${describe(text)}, not the document's text; ignored`);
      return;
    }
    if (text === this.lastText) return;
    this.lastText = text;
    if (text === undefined) this.documentGone();
    else this.applyDocument(text);
  }

  /**
   * No document is stored. Without a tombstone, nobody deleted it: the store lost it (restarted empty, evicted it),
   * and every instance dropping its deny list and quotas at once is what an attacker waits for. The last document
   * applied stays until the store holds one again or an operator deletes it (a tombstone); one warning says so.
   */
  private documentGone(): void {
    const kept = this.applied;
    if (kept === undefined) return this.applyCode();
    this.warn(
      'document_lost',
      `the stored configuration is gone without being deleted (the store restarted empty?); keeping revision ${kept.revision}` +
        `${kept.deny === undefined ? '' : ` and its ${kept.deny.length} deny ${kept.deny.length === 1 ? 'entry' : 'entries'}`}` +
        ': restore it (sluice config import) or write a new one; sluice config clear deletes it on purpose',
    );
  }

  private applyCode(): void {
    this.goodQuotas = new Map();
    if (this.configure(this.code)) this.applied = undefined;
  }

  private applyDocument(text: string): void {
    const bad: string[] = [];
    const badDeny: SluiceError[] = [];
    let compiled;
    try {
      compiled = compileLimiterConfig(text, {
        onBadQuota: (identity, error) => {
          bad.push(identity);
          const kept = this.goodQuotas.has(identity) ? 'its last good quota' : "the limiter's rules";
          this.warn('invalid_quota', `${messageOf(error)}; ignored: ${JSON.stringify(identity)} keeps ${kept}`, error);
        },
        onBadDenyEntry: (_index, error) => void badDeny.push(error),
      });
    } catch (error) {
      this.warn(
        'invalid_document',
        `the stored document is not valid and is ignored, the last configuration stays: ${messageOf(error)}`,
        error,
      );
      return;
    }
    if (compiled.deleted) return this.applyCode();
    const quotas = new Map(compiled.quotas);
    for (const identity of bad) {
      const kept = this.goodQuotas.get(identity);
      if (kept !== undefined) quotas.set(identity, kept);
    }
    // The document's quotas go over the code's, identity by identity.
    const merged = new Map(this.code.quotas);
    for (const [identity, rules] of quotas) merged.set(identity, rules);
    if (badDeny.length > 0) {
      // One warning for the document, however long its list: a list of thousands with a bad writer must not flood.
      const first = badDeny.slice(0, 3).map(messageOf).join('; ');
      const more = badDeny.length > 3 ? ` and ${badDeny.length - 3} more` : '';
      this.warn(
        'invalid_deny_entry',
        `revision ${compiled.document.revision}: ${badDeny.length} deny ${badDeny.length === 1 ? 'entry is' : 'entries are'} not valid and ignored, the other entries apply: ${first}${more}`,
        badDeny[0],
      );
    }
    const configuration = {
      rules: compiled.rules ?? this.code.rules,
      mode: compiled.mode ?? this.code.mode,
      quotas: merged,
      deny: compiled.deny ?? this.code.deny,
      denyMode: compiled.denyMode ?? this.code.denyMode,
    };
    if (this.configure(configuration)) {
      this.goodQuotas = quotas;
      this.applied = compiled.document;
    }
  }

  private configure(configuration: Configuration): boolean {
    try {
      this.limiter.configure(configuration);
      return true;
    } catch (error) {
      this.warn('apply_failed', `the limiter refused the configuration (${messageOf(error)}); the last one stays`, error);
      return false;
    }
  }

  private warn(code: ConfigWarning['code'], message: string, cause?: unknown): void {
    const text = `watchConfig(${JSON.stringify(this.limiter.name)}): ${message}`;
    if (text === this.lastWarning) return;
    this.lastWarning = text;
    try {
      this.onWarning({ code, message: text, cause });
    } catch {
      // An observer's exception is its own: the watcher keeps going.
    }
  }
}

/** One read, as a promise that settles within `ms` (a store may answer synchronously or throw). */
function withTimeout<T>(read: () => T | PromiseLike<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let answer: T | PromiseLike<T>;
    try {
      answer = read();
    } catch (error) {
      reject(error);
      return;
    }
    if (!isPromiseLike<T>(answer)) {
      resolve(answer as T);
      return;
    }
    const timer = timers.setTimeout(() => reject(new SluiceError('STORE_TIMEOUT', `no answer within ${ms} ms`)), ms);
    unref(timer);
    answer.then(
      (value) => {
        timers.clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        timers.clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => unref(timers.setTimeout(resolve, ms)));
}

/** Runs `fn`, sending any failure, thrown or rejected, to `onError`: nothing escapes unhandled. */
async function settle(fn: () => unknown, onError: (error: unknown) => void): Promise<void> {
  try {
    await fn();
  } catch (error) {
    onError(error);
  }
}

/** A timer that does not keep the process alive by itself, where the runtime can say so (Node, Bun). */
function unref(timer: unknown): void {
  const handle = timer as { unref?: () => void } | null;
  if (typeof handle === 'object' && handle !== null && typeof handle.unref === 'function') handle.unref();
}

function messageOf(error: unknown): string {
  return isSluiceError(error) ? error.detail : error instanceof Error ? error.message : String(error);
}

function defaultWarning(warning: ConfigWarning): void {
  timers.console?.warn(`[sluice] ${warning.message}`);
}
