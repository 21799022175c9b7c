/**
 * Keeps a limiter on the configuration stored under its name (config/document.ts). Decisions never touch the store
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
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import type { Limiter } from '../limiter/types.js';
import type { ConfigSource } from './source.js';
import { timers } from '../shared/timers.js';
import { optionalFunction, optionNames, rejectUnknownOptions, timerDuration } from '../shared/validate.js';
import { Watcher } from './watcher.js';
import type { ConfigWarning, ConfigWatcher, WatchConfigOptions } from './watch-types.js';

export type { ConfigWarning, ConfigWatcher, WatchConfigOptions } from './watch-types.js';

const WATCH_OPTIONS = optionNames<WatchConfigOptions>({ refresh: true, timeout: true, onWarning: true });

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
  rejectUnknownOptions(options, WATCH_OPTIONS, 'watchConfig');
  const refreshMs = timerDuration(options.refresh ?? '1s', 'watchConfig: refresh', 10);
  const timeoutMs = timerDuration(options.timeout ?? '2s', 'watchConfig: timeout');
  const onWarning = optionalFunction(options.onWarning, 'watchConfig: onWarning', '(warning) => void') ?? defaultWarning;
  return new Watcher(limiter, source, refreshMs, timeoutMs, onWarning);
}

function defaultWarning(warning: ConfigWarning): void {
  timers.console?.warn(`[sluice] ${warning.message}`);
}
