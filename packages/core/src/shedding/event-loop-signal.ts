/**
 * The utilization shedder's default signal: how busy this process is, read from the event loop's utilization and
 * delay (Node and Bun). Kept apart from the shedder so a custom signal's users, and bundles without shedders, do not
 * carry it.
 */
import { durationOption, type Duration } from '../shared/duration.js';
import { SluiceError } from '../shared/errors.js';
import { timers, unref } from '../shared/timers.js';
import { optionNames, rejectUnknownOptions, requireObject } from '../shared/validate.js';

export interface EventLoopSignalOptions {
  /** Event-loop delay counted as full utilization. @default '100ms' */
  maxDelay?: Duration;
  /** How often the delay probe runs. @default '20ms' */
  probeEvery?: Duration;
}

export interface EventLoopSignal {
  /** Stops the probe timer. */
  close(): void;
}

const KNOWN = optionNames<EventLoopSignalOptions>({ maxDelay: true, probeEvery: true });

interface EventLoopUtilization {
  idle: number;
  active: number;
  utilization: number;
}

/** What the runtime may offer: Node and Bun have `performance.eventLoopUtilization` (and unref'able timers). */
const runtime = globalThis as {
  performance?: { eventLoopUtilization?: (later?: EventLoopUtilization, earlier?: EventLoopUtilization) => EventLoopUtilization };
};

/**
 * How busy this process is, from 0 to 1, since the last call: the larger of the event loop's utilization (the
 * share of time it was running JavaScript, `performance.eventLoopUtilization`) and its delay (how late an unref'd
 * probe timer fired, as a share of `maxDelay`). Node and Bun only; elsewhere it refuses (UNSUPPORTED_OPERATION)
 * rather than report an idle process.
 */
export function createEventLoopSignal(options: EventLoopSignalOptions = {}): EventLoopSignal & (() => number) {
  rejectUnknownOptions(requireObject(options, 'createEventLoopSignal'), KNOWN, 'createEventLoopSignal');
  const maxDelayMs = durationOption(options.maxDelay ?? 100, 'createEventLoopSignal: maxDelay', { min: 1 });
  const probeMs = durationOption(options.probeEvery ?? 20, 'createEventLoopSignal: probeEvery', { min: 1, max: 60_000 });
  const elu = runtime.performance?.eventLoopUtilization;
  if (typeof elu !== 'function') {
    throw new SluiceError(
      'UNSUPPORTED_OPERATION',
      'createEventLoopSignal: this runtime has no event-loop utilization (performance.eventLoopUtilization: Node and Bun have it, edge runtimes do not); pass createUtilizationShedder a signal of your own: () => a number from 0 to 1',
    );
  }
  let previous = elu.call(runtime.performance);
  let worstLateMs = 0;
  let expected = Date.now() + probeMs;
  const timer = timers.setInterval(() => {
    const now = Date.now();
    const late = now - expected;
    if (late > worstLateMs) worstLateMs = late;
    expected = now + probeMs;
  }, probeMs);
  unref(timer);
  const read = (): number => {
    const current = elu.call(runtime.performance);
    const utilization = elu.call(runtime.performance, current, previous).utilization;
    previous = current;
    // A probe that has not fired yet is as late as it is now.
    const pending = Math.max(0, Date.now() - expected);
    const late = Math.max(worstLateMs, pending);
    // The next window starts now: a probe that fires late right after this read was late in this window, not the next.
    worstLateMs = 0;
    expected = Date.now() + probeMs;
    return Math.max(utilization, Math.min(1, late / maxDelayMs));
  };
  return Object.assign(read, { close: () => timers.clearInterval(timer) });
}
