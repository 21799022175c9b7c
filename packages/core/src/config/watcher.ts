// The watcher behind watchConfig (watch-config.ts, where what it guarantees is written): reads, pushes, the deny
// list's follower, and what it applies with limiter.configure().
import { describe } from '../shared/describe.js';
import type { SluiceError } from '../shared/errors.js';
import { isSluiceError } from '../shared/errors.js';
import type { DenyMode, Limiter, LimiterMode } from '../limiter/types.js';
import { compileLimiterConfig, type LimiterConfig } from './document.js';
import type { ConfigSource, Unsubscribe } from './source.js';
import type { DenyEntry } from '../deny/entries.js';
import { DenyFollower, SLICE_MS, nowMs } from './watch-deny.js';
import { liveDenyList, type LiveDenyLineage } from '../deny/lineage.js';
import { callWithDeadline } from '../shared/deadline.js';
import { timers, unref } from '../shared/timers.js';
import { delay, settle } from './watch-timers.js';
import type { Rule } from '../algorithms/rules.js';

import type { ConfigWarning, ConfigWatcher } from './watch-types.js';

/** What the watcher gives `configure()`: every field, so that what a document leaves out returns to the code's. */
interface Configuration {
  readonly rules: readonly Rule[];
  readonly mode: LimiterMode;
  readonly quotas: ReadonlyMap<string, readonly Rule[]>;
  readonly deny: readonly DenyEntry[];
  readonly denyMode: DenyMode;
}

export class Watcher implements ConfigWatcher {
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
  private unsubscribeDeny: Unsubscribe | undefined = undefined;
  /** Follows the deny list in the store's own structure, where the source has one (config/watch-deny.ts). */
  private readonly follower: DenyFollower | undefined;
  /** The document applied is a tombstone: the code's configuration applies, deny list included. */
  private deleted = false;
  /** The limiter holds the follower's list (so the follower's changes apply to it as they come). */
  private denyInstalled = false;
  /** The document applied was lost (reported); cleared when a document is read again. */
  private documentLost = false;
  /** The live list the limiter was given: the follower's changes go to it. */
  private live: LiveDenyLineage | undefined = undefined;

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
    this.follower =
      source.deny === undefined
        ? undefined
        : new DenyFollower(source.deny, {
            name: limiter.name,
            call: (read) => callWithDeadline(read, timeoutMs),
            change: (denyChanges) => {
              if (this.deleted) return;
              // The limiter does not hold the follower's list yet (it held the code's or a document's): all of it, once.
              if (this.denyInstalled) this.live?.change(denyChanges);
              else this.denyInstalled = this.configure({ deny: (this.live = liveDenyList(this.follower!.list)) });
            },
            replace: (deny) => {
              if (this.deleted) return;
              this.denyInstalled = this.configure({ deny: (this.live = liveDenyList(deny)) });
            },
            // A store restarted empty loses the document and the list at once: the document's warning says both.
            warn: (code, message, cause) => {
              if (code !== 'document_lost' || !this.documentLost) this.warn(code, message, cause);
            },
          });
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
    for (const unsubscribe of [this.unsubscribe, this.unsubscribeDeny]) {
      if (unsubscribe === undefined) continue;
      await settle(
        () => unsubscribe(),
        (error) => this.warn('subscribe_failed', `could not unsubscribe (${messageOf(error)})`, error),
      );
    }
    this.unsubscribe = undefined;
    this.unsubscribeDeny = undefined;
  }

  private async loop(): Promise<void> {
    while (this.wanted && !this.stopped) {
      this.wanted = false;
      await this.readOnce();
    }
  }

  private async subscribe(): Promise<void> {
    await Promise.all([this.subscribeDocument(), this.subscribeDeny()]);
  }

  /**
   * A pushed change of the deny list is applied as it arrives when it follows the version held and no read is under
   * way; anything else asks for a read.
   */
  private async subscribeDeny(): Promise<void> {
    const deny = this.source.deny;
    const follower = this.follower;
    if (deny === undefined || follower === undefined || typeof deny.subscribe !== 'function') return;
    // Pushed changes wait in a queue drained a timer turn later, about SLICE_MS of work per turn: a client delivers
    // the messages of one socket read in one go, and ten changes of 500 entries applied back to back would hold the
    // event loop for all ten.
    const queue: string[] = [];
    const drain = () => {
      const started = nowMs();
      while (queue.length > 0 && !this.stopped) {
        if (nowMs() - started >= SLICE_MS) {
          unref(timers.setTimeout(drain, 0));
          return;
        }
        const text = queue.shift()!;
        if (this.running === undefined && follower.pushed(text)) continue;
        queue.length = 0; // a read brings every change after the version held
        void this.refresh();
      }
    };
    const onChange = (text: string) => {
      if (this.stopped) return;
      if (queue.push(text) === 1) unref(timers.setTimeout(drain, 0));
    };
    await settle(
      async () => {
        const unsubscribe = await deny.subscribe!(this.limiter.name, onChange);
        if (typeof unsubscribe !== 'function') return;
        if (this.stopped) await unsubscribe();
        else this.unsubscribeDeny = unsubscribe;
      },
      (error) =>
        this.warn(
          'subscribe_failed',
          `could not subscribe to deny list changes (${messageOf(error)}); they arrive by the periodic read only`,
          error,
        ),
    );
  }

  private async subscribeDocument(): Promise<void> {
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
    // A store that did not answer for the document is not asked for the deny list too: one warning per outage.
    if (!(await this.readDocument())) return;
    if (this.follower === undefined || this.stopped) return;
    try {
      // Each store call has the timeout, not the whole read: a list read whole takes many calls, and a read that
      // went on past a timeout would run beside the next one.
      await this.follower.read();
    } catch (error) {
      this.warn('read_failed', `the deny list could not be read (${messageOf(error)}); keeping the entries held`, error);
    }
  }

  /** Reads and applies the document; false when the store did not answer. */
  private async readDocument(): Promise<boolean> {
    let text: unknown;
    try {
      text = await callWithDeadline(() => this.source.read(this.limiter.name), this.timeoutMs);
    } catch (error) {
      this.warn('read_failed', `the store could not be read (${messageOf(error)}); keeping the last known configuration`, error);
      return false;
    }
    if (this.stopped) return true;
    this.lastWarning = undefined; // the store answered: the next problem is news again
    if (text === null) text = undefined;
    if (text !== undefined && typeof text !== 'string') {
      this.warn('invalid_document', `the store returned ${describe(text)}, not the document's text; ignored`);
      return true;
    }
    if (text === this.lastText) return true;
    this.lastText = text;
    if (text !== undefined) this.documentLost = false;
    if (text === undefined) this.documentGone();
    else this.applyDocument(text);
    return true;
  }

  /**
   * No document is stored. Without a tombstone, nobody deleted it: the store lost it (restarted empty, evicted it),
   * and every instance dropping its deny list and quotas at once is what an attacker waits for. The last document
   * applied stays until the store holds one again or an operator deletes it (a tombstone); one warning says so.
   */
  private documentGone(): void {
    const kept = this.applied;
    if (kept === undefined) return this.applyCode();
    this.documentLost = true;
    const denied = this.follower?.active === true ? (this.limiter.denyLineage?.size ?? 0) : kept.deny?.length;
    this.warn(
      'document_lost',
      `the stored configuration is gone without being deleted (the store restarted empty?); keeping revision ${kept.revision}` +
        `${denied === undefined ? '' : ` and its ${denied} deny ${denied === 1 ? 'entry' : 'entries'}`}` +
        ': restore it (sluice config import) or write a new one; sluice config clear deletes it on purpose',
    );
  }

  /** The code's configuration: on a tombstone (`deleted`) all of it, else with the structure's deny list when there is one. */
  private applyCode(deleted = false): void {
    this.goodQuotas = new Map();
    this.deleted = deleted;
    if (this.configure({ ...this.code, ...this.denyList(this.code.deny) })) this.applied = undefined;
  }

  /**
   * The deny list a configuration gives: the follower's where the store keeps one (and no tombstone says
   * otherwise), left out when the limiter holds it already, so that a change of mode does not replace, and make
   * every reader rebuild, a list of 100,000 entries; else `otherwise`.
   */
  private denyList(otherwise: readonly DenyEntry[]): { deny?: readonly DenyEntry[] | LiveDenyLineage } {
    if (this.deleted || this.follower?.active !== true) {
      this.denyInstalled = false;
      return { deny: otherwise };
    }
    if (this.denyInstalled) return {};
    this.denyInstalled = true;
    return { deny: (this.live = liveDenyList(this.follower.list)) };
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
    if (compiled.deleted) return this.applyCode(true);
    this.deleted = false;
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
      // A list kept in the store's own structure replaces the document's field, which older writers wrote.
      ...this.denyList(compiled.deny ?? this.code.deny),
      denyMode: compiled.denyMode ?? this.code.denyMode,
    };
    if (this.configure(configuration)) {
      this.goodQuotas = quotas;
      this.applied = compiled.document;
    }
  }

  private configure(configuration: Omit<Partial<Configuration>, 'deny'> & { deny?: readonly DenyEntry[] | LiveDenyLineage }): boolean {
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

function messageOf(error: unknown): string {
  return isSluiceError(error) ? error.detail : error instanceof Error ? error.message : String(error);
}
