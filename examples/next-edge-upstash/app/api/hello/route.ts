export const dynamic = 'force-dynamic';

export function GET(request: Request) {
  return Response.json({ hello: 'world', identity: request.headers.get('x-rate-limit-identity') });
}
