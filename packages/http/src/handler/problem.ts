/**
 * RFC 9457 problem details for refused requests. The types are the ones draft-ietf-httpapi-ratelimit-headers-11
 * section 5 defines (quota-exceeded, temporary-reduced-capacity), with its `violated-policies` member; `detail`
 * says in words what happened and what the client can do about it.
 */

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const PROBLEM_TYPES = {
  quotaExceeded: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
  temporaryReducedCapacity: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
  blank: 'about:blank',
} as const;

export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly 'violated-policies'?: readonly string[];
  /** Same as the Retry-After header, for clients that only read bodies. */
  readonly retryAfterSeconds?: number;
  readonly [extension: string]: unknown;
}

/** Why a request was refused; picks the status and the problem body. */
export type RefusalKind = 'limited' | 'shed' | 'cost_exceeds_limit' | 'store_unavailable' | 'unidentified' | 'denied';

export const REFUSAL_STATUS: Readonly<Record<RefusalKind, number>> = {
  limited: 429,
  shed: 503,
  // The request as sent can never pass (its cost is above the policy's capacity): waiting does not help, so no
  // Retry-After, and 413 Content Too Large says "make the request smaller" where 429 would say "wait".
  cost_exceeds_limit: 413,
  store_unavailable: 503,
  unidentified: 400,
  // On a limiter's deny list: waiting does not help, so no Retry-After, and no RateLimit fields (nothing was counted).
  denied: 403,
};

export interface ProblemInput {
  readonly kind: RefusalKind;
  readonly policy?: string;
  readonly limit?: number;
  readonly windowMs?: number;
  readonly cost?: number;
  /** Whole seconds, already rounded up. */
  readonly retryAfterSeconds?: number;
  readonly reason?: string;
}

export function problemFor(input: ProblemInput): ProblemDetails {
  const status = REFUSAL_STATUS[input.kind];
  const policies = input.policy === undefined ? undefined : [input.policy];
  const wait = input.retryAfterSeconds === undefined ? '' : ` Retry after ${plural(input.retryAfterSeconds, 'second')}.`;
  const per = input.limit === undefined ? '' : ` (${plural(input.limit, 'unit')} per ${span(input.windowMs ?? 0)})`;
  switch (input.kind) {
    case 'limited':
      return {
        type: PROBLEM_TYPES.quotaExceeded,
        title: 'Too Many Requests',
        status,
        detail: `You have used up the rate limit of policy "${input.policy}"${per}.${wait} The RateLimit response header shows what is left.`,
        'violated-policies': policies,
        retryAfterSeconds: input.retryAfterSeconds,
      };
    case 'cost_exceeds_limit':
      return {
        type: PROBLEM_TYPES.quotaExceeded,
        title: 'Request Larger Than The Rate Limit',
        status,
        detail: `This request costs ${plural(input.cost ?? 0, 'unit')}, more than policy "${input.policy}" allows at once${per}. It can never pass as sent: split it into smaller requests.`,
        'violated-policies': policies,
      };
    case 'shed':
      return {
        type: PROBLEM_TYPES.temporaryReducedCapacity,
        title: 'Service Unavailable',
        status,
        detail: `The server is at capacity (policy "${input.policy}") and is shedding load.${wait}`,
        'violated-policies': policies,
        retryAfterSeconds: input.retryAfterSeconds,
      };
    case 'store_unavailable':
      return {
        type: PROBLEM_TYPES.temporaryReducedCapacity,
        title: 'Service Unavailable',
        status,
        detail: `The rate limiter cannot reach its store and refuses requests until it can.${wait}`,
        retryAfterSeconds: input.retryAfterSeconds,
      };
    case 'denied':
      // `reason: 'denied'` is the member a client can branch on; `denyReason` is the operator's words, when given.
      return {
        type: PROBLEM_TYPES.blank,
        title: 'Forbidden',
        status,
        detail: `This client is not allowed to make requests here${input.reason === undefined ? '' : `: ${input.reason}`}.`,
        reason: 'denied',
        ...(input.reason === undefined ? {} : { denyReason: input.reason }),
      };
    case 'unidentified':
      return {
        type: PROBLEM_TYPES.blank,
        title: 'Bad Request',
        status,
        detail: `The rate limiter could not tell who sent this request: ${input.reason ?? 'no identity'}. Sign in, or send it directly rather than through an unexpected proxy.`,
      };
  }
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** A window length in the largest unit that divides it: `1 s`, `90 s`, `5 min`, `1 h`, `250 ms`. */
export function span(ms: number): string {
  const units: Array<[number, string]> = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) return plural(ms / size, name);
  }
  return `${ms} ms`;
}
