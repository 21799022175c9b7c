/**
 * `sluice config export` and `sluice config import`, the built binary against a real redis-server, a SQLite file
 * and the Upstash REST fixture: every limiter's document copied out and back (its deny list, kept in a structure of
 * its own, as the document's deny field), a tombstone left out, a bad export refused whole (exit 2, nothing
 * written), and names required where the store cannot list them. A list of 100,000 entries:
 * deny-structure-large.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readLimiterConfig } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { sluice, storedDeny, useStores } from './run-cli.js';

const stores = useStores('sluice-cli-backup-');

describe('sluice config export and import', () => {
  const redisAt = () => ['--redis', `redis://127.0.0.1:${stores.server.port}`];

  test('on Redis: every limiter exported, a tombstone left out; the store emptied and imported back at the same revisions', async () => {
    for (const [name, ...args] of [
      ['api', 'deny', 'add', 'user:1'],
      ['api', 'deny', 'mode', 'shadow'],
      ['search', 'off'],
      ['gone', 'off'],
      ['gone', 'clear'],
    ]) {
      const run = await sluice(['config', ...args, '--name', name!, ...redisAt()]);
      expect(run.code, run.stderr).toBe(0);
    }
    const exported = await sluice(['config', 'export', ...redisAt()]);
    expect(exported.code, exported.stderr).toBe(0);
    const backup = JSON.parse(exported.stdout);
    expect(Object.keys(backup.limiters)).toEqual(['api', 'search']);
    // The deny list, kept in its own structure, is exported as the document's deny field. Revision 2: the first deny
    // write made an empty document (revision 1) so that the limiter is found, and the deny mode wrote the second.
    expect(backup.limiters.api).toMatchObject({ revision: 2, denyMode: 'shadow', deny: [{ match: 'user:1' }] });
    expect(exported.stderr).toMatch(/exported the configuration of 2 limiters from redis:\/\/127\.0\.0\.1:\d+/);

    await stores.redis.flushall();
    const imported = await sluice(['config', 'import', '-', ...redisAt()], {}, exported.stdout);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toMatch(/^restored "api" at revision 2, 1 deny entry/);
    // The document goes back without its deny field, the entries into the deny structure.
    const { deny, ...document } = backup.limiters.api;
    expect(JSON.parse((await stores.redis.get('sluice:config:api'))!)).toEqual(document);
    expect(await storedDeny(stores.redis, 'api')).toEqual(deny);
    expect(await readLimiterConfig(redisConfigSource(stores.redis), 'api')).toEqual(backup.limiters.api);
    expect(JSON.parse((await stores.redis.get('sluice:config:search'))!)).toEqual(backup.limiters.search);
    // Over a newer revision, the next one: the import lands, and watchers see a change.
    await sluice(['config', 'on', '--name', 'search', ...redisAt()]);
    expect((await sluice(['config', 'import', ...redisAt()], {}, exported.stdout)).code).toBe(0);
    expect(JSON.parse((await stores.redis.get('sluice:config:search'))!)).toMatchObject({ revision: 3, mode: 'off' });
  });

  test('a bad export is refused whole with exit 2 naming the problem, and nothing is written', async () => {
    await stores.redis.flushall();
    const file = join(stores.folder, 'bad.json');
    const bad = { sluice: 'config-export', version: 1, limiters: { api: { version: 1, mode: 'off' }, search: { version: 1, mode: 'of' } } };
    writeFileSync(file, JSON.stringify(bad));
    const refused = await sluice(['config', 'import', file, ...redisAt()]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/limiters\["search"\]: mode must be 'enforce', 'shadow' or 'off', got "of"; nothing was imported/);
    expect(await stores.redis.keys('*')).toEqual([]);
    writeFileSync(file, '{"version":1}');
    expect((await sluice(['config', 'import', file, ...redisAt()])).stderr).toMatch(/is not an export of sluice config export/);
    const missing = await sluice(['config', 'import', join(stores.folder, 'none.json'), ...redisAt()]);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringMatching(/could not read .*none\.json/)]);
  });

  test('on SQLite, listed from its table; on Upstash, names must be given', async () => {
    const file = join(stores.folder, 'fleet.db');
    expect((await sluice(['config', 'off', '--name', 'api', '--sqlite', file])).code).toBe(0);
    const exported = await sluice(['config', 'export', '--sqlite', file]);
    expect(JSON.parse(exported.stdout).limiters).toMatchObject({ api: { mode: 'off', revision: 1 } });
    const upstash = ['--upstash-url', stores.fixture.url, '--upstash-token', stores.fixture.token];
    const unlisted = await sluice(['config', 'export', ...upstash]);
    expect([unlisted.code, unlisted.stderr]).toEqual([2, expect.stringMatching(/cannot list .*give them with --names api,search/)]);
    expect((await sluice(['config', 'import', '-', ...upstash], {}, exported.stdout)).code).toBe(0);
    const named = await sluice(['config', 'export', '--names', 'api,other', ...upstash]);
    expect(Object.keys(JSON.parse(named.stdout).limiters)).toEqual(['api']);
  });
});
