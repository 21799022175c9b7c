export interface Admissions {
  readonly identity: ArrayLike<number>;
  readonly start: ArrayLike<number>;
  readonly end: ArrayLike<number>;
  readonly length: number;
}
export interface Verdict {
  admitted: number;
  over: number;
  worstWindow: number;
  worstRatio: number;
  overWindows: number;
  worst: Array<{ identity: number; window: number; admitted: number }>;
}
export function judgeFixedWindow(admissions: Admissions, rule: { limit: number; windowMs: number; offsetMs?: number }): Verdict;
