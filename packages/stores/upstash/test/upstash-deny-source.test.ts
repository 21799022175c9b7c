/**
 * upstashConfigSource's deny lists through the real @upstash/redis client (JSON replies parsed, base64, and
 * neither) and the store's own REST client, against the fixture on a real Redis (node and edge-runtime): the shared
 * deny source suite, then the keys it shares with the Redis source and the one request each call costs.
 */
import { changeText, stampChangeText } from '@sluice/core/config';
import { describeDenySourceConformance } from '@sluice/conformance';
import { denyKeys } from '@sluice/redis-script';
import { describe, expect, it } from 'vitest';
import { upstashConfigSource } from '../src/index.js';
import { client, control, identity, token, url } from './helpers.js';

const admin = client({ automaticDeserialization: false });
const lose = async (name: string) => void (await admin.del(...denyKeys('sluice', name)));

const clients = {
  'the @upstash/redis client (JSON replies parsed, base64)': () => upstashConfigSource(client()),
  'the @upstash/redis client (no base64, no deserialization)': () =>
    upstashConfigSource(client({ responseEncoding: false, automaticDeserialization: false })),
  "the store's own REST client ({ url, token })": () => upstashConfigSource({ url, token }),
};

for (const [name, make] of Object.entries(clients)) {
  describeDenySourceConformance({
    name: `upstash, ${name}`,
    createSource: () => make().deny,
    lose,
    push: false,
    countsRemoved: true,
    listPrefix: 'deny-upstash',
    timeoutMs: 60_000,
  });
}

describe('upstashConfigSource deny lists', () => {
  it("keep the Redis source's keys: sluice:deny:{<name>} (entries), :meta and :log", async () => {
    const name = identity('keys');
    const change = { add: [{ match: 'user:1', reason: '{"json":"inside"}' }] };
    const made = await upstashConfigSource(client()).deny.change(name, change);
    // Without deserialization HGETALL answers the flat field, value list Redis sends.
    expect(await admin.hgetall(`sluice:deny:{${name}}`)).toEqual(['user:1', '{"match":"user:1","reason":"{\\"json\\":\\"inside\\"}"}']);
    expect(await admin.hgetall(`sluice:deny:{${name}}:meta`)).toEqual(['epoch', made.epoch, 'version', '1']);
    expect(await admin.lrange(`sluice:deny:{${name}}:log`, 0, -1)).toEqual([stampChangeText(changeText(change), made)]);
  });

  it('each call is one EVAL request, and nothing is PUBLISHed', async () => {
    const name = identity('cost');
    const deny = upstashConfigSource(client({ enableAutoPipelining: false })).deny;
    await control.reset();
    const made = await deny.change(name, { add: Array.from({ length: 1_000 }, (_, i) => ({ match: `user:${i}` })) });
    await deny.readChanges(name, { epoch: made.epoch, version: 0 });
    await deny.readPage(name, '0', 100);
    const stats = await control.stats();
    expect(stats.requests).toBe(3);
    expect(stats.byCommand).toEqual({ eval: 3 });
  });
});
