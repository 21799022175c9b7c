/**
 * What the dashboard shows and changes, apart from HTTP: the fleet's state (each limiter's decisions per second from
 * the analytics store, the identities it limited most in the last minute, its stored configuration) and the
 * actions (mode, quota, deny entry, the deny list's mode), each through core's validated compare-and-set writers, the ones `sluice config`
 * uses. A wrong input throws INVALID_OPTION and writes nothing; anything else that throws is the store failing.
 */
import { SluiceError, isSluiceError, type LimiterMode } from '@sluice/core';
import { modeOption } from '@sluice/core/internal';
import {
  addDenyEntry,
  readLimiterConfig,
  removeDenyEntry,
  removeQuota,
  setLimiterMode,
  setDenyListMode,
  setQuota,
  type ConfigSource,
  type DenyEntry,
  type LimiterConfig,
} from '@sluice/core/config';
import { messageOf } from '../commands/config-connection.js';
import { checkMatch, denyUntil, skippedDenyEntries, type SkippedDenyEntry } from '../commands/deny-input.js';
import { parseRules } from '../commands/config.js';
import { ConfigMemory, type LostConfig } from './config-memory.js';
import type { AnalyticsSecond, AnalyticsStore } from '@sluice/core/analytics';

/** The chart's span: the last 15 minutes. */
export const WINDOW_SECONDS = 900;
/**
 * How far behind the clock the window ends, in seconds: an instance publishes each second within a second of its
 * end (createFleetAnalytics' timer), so the second before the last is the newest every instance has published.
 */
export const LAG_SECONDS = 2;
/** "Limited most": the last minute. */
export const TOP_SECONDS = 60;
/** How many identities "limited most" lists. */
const TOP_COUNT = 10;
/** Config names are listed (a SCAN on Redis) at most this often. */
const NAMES_TTL_MS = 10_000;
/**
 * The whole 15 minutes are read again at most this often, the last minute on every poll: a second is final once
 * every instance published it, about a second after it ends, but an instance that could not publish for a while
 * adds to older seconds when it can, and such a late addition appears within this time.
 */
const WINDOW_READ_MS = 10_000;
/** The seconds read on every poll. */
const FRESH_SECONDS = TOP_SECONDS;

export interface LimiterView {
  name: string;
  /** Seconds with decisions in [from, to], ascending; a second with none is left out. */
  seconds: readonly AnalyticsSecond[];
  /** Sum of topLimited over the last TOP_SECONDS complete seconds, most first. */
  topLimited: readonly (readonly [string, number])[];
  /** The stored document, or null when none is stored (instances use their code's configuration). */
  config: LimiterConfig | null;
  /** Set when the stored document is not valid (instances ignore it). */
  configError?: string;
  /**
   * Set when no document is stored but the dashboard read one earlier and no operator deleted it (no tombstone): the
   * store lost it (restarted empty). Instances that applied it keep it; `restore` writes it back.
   */
  lost?: LostConfig;
  /**
   * Deny entries of the stored document that are not valid (written by hand, or by another version): left out of
   * `config`, as instances leave them out, and listed here so the page can say so and remove them by their match.
   */
  denySkipped?: readonly SkippedDenyEntry[];
}

export interface FleetState {
  /** Epoch seconds: the chart spans [from, to], `to` the newest second every instance has published (LAG_SECONDS). */
  from: number;
  to: number;
  /** Whether decisions can be shown: false for a store with no analytics reader (Upstash). */
  analytics: boolean;
  /** Whether names with a configuration document are listed; when not, the page asks for names. */
  namesListed: boolean;
  limiters: readonly LimiterView[];
}

export interface FleetViewOptions {
  source: ConfigSource;
  analytics: AnalyticsStore | undefined;
  /** Names of limiters that have a configuration document, when the store can list them. */
  listConfigNames: (() => Promise<readonly string[]>) | undefined;
  now?: () => number;
}

/** An action from the page, as its JSON body says it. */
export type Action =
  | { action: 'mode'; name: string; mode: LimiterMode }
  | { action: 'denyMode'; name: string; mode: LimiterMode }
  | { action: 'setQuota'; name: string; identity: string; rules: string }
  | { action: 'removeQuota'; name: string; identity: string }
  | { action: 'addDeny'; name: string; match: string; for?: string; reason?: string; kind?: 'identity' | 'auto' }
  | { action: 'removeDeny'; name: string; match: string }
  | { action: 'restore'; name: string };

export class FleetView {
  private readonly options: FleetViewOptions;
  private configNames: { at: number; names: readonly string[] } | undefined;
  /** Per name: the seconds last read, and when the whole window was. */
  /** The documents read, to tell one the store lost from one deleted on purpose. */
  private readonly memory = new ConfigMemory();
  private readonly series = new Map<string, { windowReadAt: number; seconds: readonly AnalyticsSecond[] }>();
  /** The state being read: polls that arrive meanwhile (several pages open) share it. */
  private reading: { key: string; state: Promise<FleetState> } | undefined;

  constructor(options: FleetViewOptions) {
    this.options = options;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Every limiter's view; `extraNames` are names the page was given (a store that cannot list its documents). */
  state(extraNames: readonly string[]): Promise<FleetState> {
    const key = JSON.stringify([...extraNames].sort());
    if (this.reading?.key === key) return this.reading.state;
    const state = this.read(extraNames).finally(() => {
      if (this.reading?.state === state) this.reading = undefined;
    });
    this.reading = { key, state };
    return state;
  }

  private async read(extraNames: readonly string[]): Promise<FleetState> {
    const to = Math.floor(this.now() / 1000) - LAG_SECONDS;
    const from = to - WINDOW_SECONDS + 1;
    const { analytics } = this.options;
    const names = new Set<string>();
    if (analytics !== undefined) for (const name of await analytics.names()) names.add(name);
    for (const name of await this.listConfigNames()) names.add(name);
    for (const name of extraNames) names.add(name);
    for (const name of this.memory.names()) names.add(name);
    const limiters = await Promise.all([...names].sort().map((name) => this.limiter(name, from, to)));
    for (const name of this.series.keys()) if (!names.has(name)) this.series.delete(name);
    return { from, to, analytics: analytics !== undefined, namesListed: this.options.listConfigNames !== undefined, limiters };
  }

  private async listConfigNames(): Promise<readonly string[]> {
    const list = this.options.listConfigNames;
    if (list === undefined) return [];
    const now = this.now();
    if (this.configNames === undefined || now - this.configNames.at >= NAMES_TTL_MS) this.configNames = { at: now, names: await list() };
    return this.configNames.names;
  }

  private async limiter(name: string, from: number, to: number): Promise<LimiterView> {
    const { analytics } = this.options;
    const [seconds, config] = await Promise.all([
      analytics === undefined ? [] : this.seconds(analytics, name, from, to),
      this.readConfig(name).catch((error: unknown) => {
        // A document that is not valid is shown as such; a store that failed fails the whole answer.
        if (isSluiceError(error) && error.code === 'INVALID_OPTION') return { document: null, skipped: [], error: messageOf(error) };
        throw error;
      }),
    ]);
    const totals = new Map<string, number>();
    for (const second of seconds) {
      if (second.second <= to - TOP_SECONDS || second.second > to) continue;
      for (const [identity, count] of second.topLimited) totals.set(identity, (totals.get(identity) ?? 0) + count);
    }
    const topLimited = [...totals].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, TOP_COUNT);
    return {
      name,
      seconds: seconds.filter((second) => second.second >= from && second.second <= to),
      topLimited,
      config: config.document,
      ...this.lostField(name, config),
      ...('error' in config ? { configError: config.error } : {}),
      ...(config.skipped.length > 0 ? { denySkipped: config.skipped } : {}),
    };
  }

  /** The stored document as instances read it: a bad deny entry left out, and listed. */
  private async readConfig(name: string): Promise<{ document: LimiterConfig | null; skipped: readonly SkippedDenyEntry[] }> {
    const skipped = skippedDenyEntries();
    const document = await readLimiterConfig(this.options.source, name, { onBadDenyEntry: skipped.onBadDenyEntry });
    return { document: document ?? null, skipped: skipped.entries };
  }

  /** `{ lost }` when the store lost `name`'s document (see ConfigMemory); nothing for a document that is not valid. */
  private lostField(name: string, config: { document: LimiterConfig | null; error?: string }): { lost?: LostConfig } {
    if (config.error !== undefined) return {};
    const lost = this.memory.recordRead(name, config.document);
    return lost === undefined ? {} : { lost };
  }

  /** `name`'s seconds in [from, to]: the last minute read now, the rest as read within WINDOW_READ_MS. */
  private async seconds(analytics: AnalyticsStore, name: string, from: number, to: number): Promise<readonly AnalyticsSecond[]> {
    const now = this.now();
    const cached = this.series.get(name);
    if (cached === undefined || now - cached.windowReadAt >= WINDOW_READ_MS) {
      const seconds = await analytics.read(name, from, to);
      this.series.set(name, { windowReadAt: now, seconds });
      return seconds;
    }
    const freshFrom = to - FRESH_SECONDS + 1;
    const fresh = await analytics.read(name, freshFrom, to);
    const seconds = [...cached.seconds.filter((second) => second.second >= from && second.second < freshFrom), ...fresh];
    this.series.set(name, { windowReadAt: cached.windowReadAt, seconds });
    return seconds;
  }

  /** Carries out one action through core's writers; returns the document written (or, for a deny entry, as it is now). */
  async act(input: unknown): Promise<LimiterConfig | null> {
    const action = checkAction(input);
    const { source } = this.options;
    switch (action.action) {
      case 'restore':
        return this.memory.restore(source, action.name);
      case 'mode':
        return setLimiterMode(source, action.name, action.mode);
      case 'denyMode':
        return setDenyListMode(source, action.name, action.mode);
      case 'setQuota':
        return setQuota(source, action.name, action.identity, parseRules(action.rules, 'rules'));
      case 'removeQuota':
        return removeQuota(source, action.name, action.identity);
      case 'addDeny': {
        checkMatch(action.match, { identity: action.kind === 'identity', field: 'match' });
        const now = this.now();
        const entry: DenyEntry = {
          match: action.match,
          ...(action.for === undefined ? {} : { until: denyUntil(action.for, now, 'for') }),
          ...(action.reason === undefined ? {} : { reason: action.reason }),
        };
        await addDenyEntry(source, action.name, entry, { now });
        // The document as it is now, its list as instances apply it (the writer answers only the entry it wrote).
        return (await this.readConfig(action.name)).document;
      }
      case 'removeDeny':
        if (!(await removeDenyEntry(source, action.name, action.match))) {
          throw new SluiceError(
            'INVALID_OPTION',
            `no deny entry of ${JSON.stringify(action.name)} matches ${JSON.stringify(action.match)} exactly`,
          );
        }
        return (await this.readConfig(action.name)).document;
    }
  }
}

const FIELDS: Record<Action['action'], { required: string[]; optional: string[] }> = {
  mode: { required: ['name', 'mode'], optional: [] },
  denyMode: { required: ['name', 'mode'], optional: [] },
  setQuota: { required: ['name', 'identity', 'rules'], optional: [] },
  removeQuota: { required: ['name', 'identity'], optional: [] },
  addDeny: { required: ['name', 'match'], optional: ['for', 'reason', 'kind'] },
  removeDeny: { required: ['name', 'match'], optional: [] },
  restore: { required: ['name'], optional: [] },
};

/** The body's shape: an action the page can send, its fields strings; an empty optional field counts as absent. */
function checkAction(input: unknown): Action {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new SluiceError('INVALID_OPTION', 'the body must be a JSON object such as {"action":"mode","name":"api","mode":"shadow"}');
  }
  const body = input as Record<string, unknown>;
  const fields = FIELDS[body.action as Action['action']];
  if (typeof body.action !== 'string' || fields === undefined || !Object.hasOwn(FIELDS, body.action)) {
    throw new SluiceError('INVALID_OPTION', `action must be one of ${Object.keys(FIELDS).join(', ')}, got ${JSON.stringify(body.action)}`);
  }
  const action: Record<string, string> = { action: body.action };
  for (const field of [...fields.required, ...fields.optional]) {
    const value = body[field];
    const required = fields.required.includes(field);
    if (value === undefined || value === null || (!required && value === '')) {
      if (required) throw new SluiceError('INVALID_OPTION', `${body.action}: ${field} is required`);
      continue;
    }
    if (typeof value !== 'string' || (required && value.trim() === '')) {
      throw new SluiceError('INVALID_OPTION', `${body.action}: ${field} must be a non-empty string, got ${JSON.stringify(value)}`);
    }
    action[field] = value;
  }
  if (action.action === 'mode' || action.action === 'denyMode') modeOption(action.mode, 'mode');
  if (action.kind !== undefined && action.kind !== 'identity' && action.kind !== 'auto') {
    throw new SluiceError(
      'INVALID_OPTION',
      `addDeny: kind must be identity (the match is an identity as it is, such as an API key) or auto (an address, a block or an identity with a prefix), got ${JSON.stringify(action.kind)}`,
    );
  }
  return action as unknown as Action;
}
