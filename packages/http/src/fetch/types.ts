// The response as the outbound fetch and its limit learners read it, apart from throttled-fetch.ts: the learners
// (learn-limit.ts, shared-limit-learner.ts) take it, and throttled-fetch.ts takes the learners.

/** The parts of a fetch Response the throttled fetch reads. */
export interface ResponseLike {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
}
