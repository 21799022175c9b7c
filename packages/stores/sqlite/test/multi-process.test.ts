import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempFolder } from './helpers.js';

// Four processes share one file and hammer one identity at one fixed instant: SQLite's write lock must
// serialise every decision so that exactly `limit` pass in total, whoever wins the races.
const HAMMER = fileURLToPath(new URL('./fixtures/hammer.mjs', import.meta.url));
const PROCESSES = 4;
const ATTEMPTS = 400; // per process per scenario: 1600 attempts against a limit of 500
const LIMIT = 500;
const NOW = 1_800_000_000_000;

interface Counts {
  allowed: number;
  denied: number;
  degraded: number;
}

const folder = tempFolder('multi');
const file = folder.file('shared.db');
const children: ChildProcess[] = [];
/** Per scenario, how many processes had at least one request admitted. */
const winners: number[] = [];

function next(child: ChildProcess, type: string): Promise<Counts> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string } & Counts) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message);
    };
    const onExit = (code: number | null) => reject(new Error(`hammer process ${child.pid} exited with ${code} before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function hammer(scenario: string): Promise<Counts[]> {
  await Promise.all(
    children.map((child) => {
      const ready = next(child, 'ready');
      child.send({ type: 'setup', scenario, limit: LIMIT });
      return ready;
    }),
  );
  // Every child is set up and idle: release them together.
  const done = children.map((child) => next(child, 'done'));
  for (const child of children) child.send({ type: 'go', attempts: ATTEMPTS });
  return Promise.all(done);
}

beforeAll(async () => {
  for (let i = 0; i < PROCESSES; i++) {
    const child = fork(HAMMER, [file, String(NOW)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
  }
  await Promise.all(children.map((child) => next(child, 'ready')));
}, 30_000);

afterAll(async () => {
  await Promise.all(
    children.map((child) =>
      child.exitCode !== null
        ? undefined
        : new Promise<void>((resolve) => {
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.send({ type: 'exit' });
          }),
    ),
  );
  folder.remove();
});

describe('four processes on one file', () => {
  for (const scenario of ['fixed-window', 'sliding-window-log', 'token-bucket', 'gcra', 'compound']) {
    it(`${scenario}: exactly the limit passes`, async () => {
      const counts = await hammer(scenario);
      const total = (field: keyof Counts) => counts.reduce((sum, c) => sum + c[field], 0);
      console.log(
        `${scenario}: allowed per process ${counts.map((c) => c.allowed).join(' + ')} = ${total('allowed')} of ${PROCESSES * ATTEMPTS} attempts`,
      );
      winners.push(counts.filter((c) => c.allowed > 0).length);
      expect(total('degraded')).toBe(0);
      expect(total('allowed')).toBe(LIMIT);
      expect(total('denied')).toBe(PROCESSES * ATTEMPTS - LIMIT);
    }, 60_000);
  }

  it('the processes really raced: in some scenario several of them were admitted', () => {
    expect(winners).toHaveLength(5);
    expect(Math.max(...winners)).toBeGreaterThan(1);
  });

  it('compound: the looser rule was charged only for the requests that passed both', () => {
    const db = new Database(file, { readonly: true });
    try {
      const row = db.prepare(`SELECT state FROM sluice_state WHERE key = 'sluice:compound:{shared}' AND rule = 'fw:3600000'`).get() as {
        state: string;
      };
      // Fixed window state is [windowStart, count].
      expect(Number(row.state.split(',')[1])).toBe(LIMIT);
    } finally {
      db.close();
    }
  });
});
