/**
 * sqliteConfigSource's deny lists written by several OS processes at once, each on its own connection to one file (as
 * a fleet shares it): a change is one IMMEDIATE transaction, so no two changes get one version and the log holds all.
 * The processes run the built package (test/deny-writer-worker.mjs).
 */
import { fork } from 'node:child_process';
import Database from 'better-sqlite3';
import { DENY_LOG_LENGTH } from '@sluice/core/config';
import { afterAll, expect, it } from 'vitest';
import { sqliteConfigSource } from '../src/index.js';
import { tempFolder } from './helpers.js';

const folder = tempFolder('deny-processes');
const file = folder.file('deny.db');
const PER_PROCESS = 1_000;
afterAll(() => folder.remove());

it('3 processes making 1,000 changes each to one list at once get 3,000 versions, each once, and the log the last 1024 in order', async () => {
  const db = new Database(file);
  db.pragma('journal_mode = WAL'); // as sqliteStore sets the file it shares with the config source
  try {
    const deny = sqliteConfigSource(db).deny;
    const children = ['p0', 'p1', 'p2'].map((tag) =>
      fork(new URL('./deny-writer-worker.mjs', import.meta.url), [file, 'processes', String(PER_PROCESS), tag], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    const ready = children.map((child) => new Promise((resolve) => child.once('message', resolve)));
    const runs = children.map(
      (child) =>
        new Promise<number[]>((resolve, reject) => {
          child.once('error', reject);
          child.once('exit', (code) => code === 0 || reject(new Error(`a writer process exited with ${code}`)));
          void ready[children.indexOf(child)]!.then(() =>
            child.once('message', (message: { versions?: number[]; error?: string }) =>
              message.versions !== undefined ? resolve(message.versions) : reject(new Error(`a writer failed: ${message.error}`)),
            ),
          );
        }),
    );
    await Promise.all(ready);
    for (const child of children) child.send('go');
    const versions = (await Promise.all(runs)).flat();
    expect([...versions].sort((a, b) => a - b)).toEqual(Array.from({ length: 3 * PER_PROCESS }, (_, i) => i + 1));
    const at = (await deny.readChanges('processes', undefined)).version!;
    expect(at.version).toBe(3 * PER_PROCESS);
    const changes = (await deny.readChanges('processes', { epoch: at.epoch, version: 3 * PER_PROCESS - DENY_LOG_LENGTH })).changes!;
    expect(changes.map((text) => (JSON.parse(text) as { version: number }).version)).toEqual(
      Array.from({ length: DENY_LOG_LENGTH }, (_, i) => 3 * PER_PROCESS - DENY_LOG_LENGTH + i + 1),
    );
    expect(db.prepare("SELECT count(*) FROM sluice_config_deny WHERE name = 'processes'").pluck().get()).toBe(3 * PER_PROCESS);
  } finally {
    db.close();
  }
}, 60_000);
