/**
 * What a line parser answers besides an identity number (>= 0): why a line was skipped. Each reason is counted
 * and shown in every report, so a log the parser misreads is visible instead of silently thinning the traffic.
 */
export const SKIP_REASONS = {
  notJson: 'not a JSON object',
  notAccessLog: 'not a common/combined log line',
  invalidUtf8: 'invalid UTF-8',
  tooLong: 'longer than --max-line-bytes',
  noTime: 'no timestamp',
  badTime: 'timestamp not readable',
  badUser: 'user id neither a string nor a number',
  noIdentity: 'no user id and no readable client IP',
} as const;

export type SkipReason = keyof typeof SKIP_REASONS;

/** Negative parser answers, one per reason, so the hot loop returns a number and allocates nothing. */
export const SKIP_CODES: readonly SkipReason[] = [
  'notJson',
  'notAccessLog',
  'invalidUtf8',
  'tooLong',
  'noTime',
  'badTime',
  'badUser',
  'noIdentity',
];

/** The negative code of `reason`: -1 for the first, -2 for the second, ... */
export function skipCode(reason: SkipReason): number {
  return -1 - SKIP_CODES.indexOf(reason);
}

export const NOT_JSON = skipCode('notJson');
export const NOT_ACCESS_LOG = skipCode('notAccessLog');
export const INVALID_UTF8 = skipCode('invalidUtf8');
export const TOO_LONG = skipCode('tooLong');
export const NO_TIME = skipCode('noTime');
export const BAD_TIME = skipCode('badTime');
export const BAD_USER = skipCode('badUser');
export const NO_IDENTITY = skipCode('noIdentity');

/** A parser of one log format: `parse` answers an identity number and sets `time`, or answers a skip code. */
export interface LineParser {
  /** Epoch ms of the last line parsed successfully. */
  time: number;
  /** Call before parsing lines of a new text: cached search positions belong to the previous one. */
  newText(): void;
  parse(text: string, start: number, end: number): number;
}
