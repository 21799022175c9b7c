/**
 * Who is calling. Rate limits follow the authenticated user first and the client IP only for anonymous
 * requests, so a whole office behind one NAT does not share one bucket. In a real app this is where you verify
 * a session cookie or a JWT. Never key by a value the client picks freely (an unverified user id): a client
 * that rotates it gets a fresh bucket each time. Here an unknown key simply counts as anonymous.
 */
const DEMO_KEYS: Readonly<Record<string, string>> = {
  'demo-key-alice': 'alice',
  'demo-key-bob': 'bob',
};

export function userFor(authorization: string | null): string | undefined {
  const match = /^Bearer (\S+)$/.exec(authorization ?? '');
  return match === null ? undefined : DEMO_KEYS[match[1]!];
}
