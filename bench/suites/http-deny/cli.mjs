// Child process (run with tsx, for the test harness's startRedis): the `sluice config deny` commands an operator runs
// on a deny list of 100,000 entries kept on a real redis-server, in the Redis config source's own deny structure, each run as the built binary in a process of its
// own and timed by wall clock from spawn to exit (Node's start and the CLI's load included, as the operator waits):
// remove one entry (100,000 to 99,999) and add it back, a page (list --limit 100), the whole list as NDJSON
// (list --json), and an import of a 100,000-line feed that differs from the list by 100 matches (50 new, 50 gone,
// --replace), the list set back (replaceDenyEntries) before each import. `sluice --version` as the floor. Each process's own CPU time
// too (cpu-usage.cjs), which a loaded machine does not stretch. Prints one JSON line.
//   node --import tsx bench/suites/http-deny/cli.mjs [runs]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addDenyEntries, replaceDenyEntries } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { Redis } from 'ioredis';
import { startRedis } from '../../../test/harness/redis.ts';
import { reply } from '../../lib/child.mjs';
import { denyEntries } from './entries.mjs';

const runs = Number(process.argv[2] ?? 7);
const ENTRIES = 100_000;
const CHANGES = 100;
const require = createRequire(import.meta.url);
const CLI = join(dirname(require.resolve('@sluice/cli/package.json')), 'dist', 'cli.js');
const NAME = 'bench';
const CPU_USAGE = fileURLToPath(new URL('./cpu-usage.cjs', import.meta.url));

/** Runs the CLI, reads its output to the end; wall ms from spawn to exit, stdout's lines, stderr. */
function sluice(args, input) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--require', CPU_USAGE, CLI, ...args], {
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    let cpu = '';
    child.stdio[3].setEncoding('utf8');
    child.stdio[3].on('data', (chunk) => (cpu += chunk));
    let lines = 0;
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      for (let i = chunk.indexOf('\n'); i !== -1; i = chunk.indexOf('\n', i + 1)) lines++;
      if (stdout.length < 4096) stdout += chunk.slice(0, 4096);
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - started;
      if (code !== 0) reject(new Error(`sluice ${args.join(' ')} exited ${code}: ${stderr}`));
      else resolve({ ms, cpuMs: Number(cpu) / 1_000, lines, stdout, stderr });
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

/** Median, least and most wall time of the runs, and the median of their CPU time. */
function stats(runs) {
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const wall = runs.map((run) => run.ms);
  return {
    medianMs: median(wall),
    minMs: Math.min(...wall),
    maxMs: Math.max(...wall),
    cpuMedianMs: median(runs.map((run) => run.cpuMs)),
    runs: runs.length,
  };
}

const server = await startRedis();
const redis = new Redis({ host: server.host, port: server.port });
const folder = mkdtempSync(join(tmpdir(), 'sluice-bench-deny-cli-'));
try {
  const at = ['--name', NAME, '--redis', `redis://${server.host}:${server.port}`];
  const now = Date.now();
  const entries = denyEntries(ENTRIES).map((entry) => ({ ...entry, addedAt: now }));
  const source = redisConfigSource(redis);
  await addDenyEntries(source, NAME, entries, { now });
  const reset = () => replaceDenyEntries(source, NAME, entries);
  const listBytes = entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)), 0);

  // The feed: the list's matches with 50 left out and 50 new ones.
  const gone = new Set(entries.slice(0, CHANGES / 2).map((entry) => entry.match));
  const feedLines = entries.filter((entry) => !gone.has(entry.match)).map((entry) => entry.match);
  for (let i = 0; i < CHANGES / 2; i++) feedLines.push(`user:feed-${i}`);
  const feed = join(folder, 'feed.txt');
  writeFileSync(feed, `# ${feedLines.length} matches\n${feedLines.join('\n')}\n`);

  const samples = { floor: [], remove: [], add: [], page: [], json: [], import: [] };
  const victim = entries[ENTRIES - 1].match;
  for (let run = 0; run < runs; run++) {
    samples.floor.push(await sluice(['--version']));
    samples.remove.push(await sluice(['config', 'deny', 'remove', victim, ...at]));
    samples.add.push(await sluice(['config', 'deny', 'add', victim, ...at]));
    const page = await sluice(['config', 'deny', 'list', '--limit', '100', ...at]);
    if (page.lines !== 101) throw new Error(`list --limit 100 printed ${page.lines} lines, not a header and 100 rows`);
    samples.page.push(page);
    const json = await sluice(['config', 'deny', 'list', '--json', ...at]);
    if (json.lines !== ENTRIES) throw new Error(`list --json printed ${json.lines} lines, not ${ENTRIES}`);
    samples.json.push(json);
    await reset();
    const imported = await sluice(['config', 'deny', 'import', feed, '--replace', ...at]);
    const summary = JSON.parse(imported.stdout);
    if (summary.added !== CHANGES / 2 || summary.removed !== CHANGES / 2 || summary.entries !== ENTRIES) {
      throw new Error(`import applied ${imported.stdout.trim()}, not ${CHANGES / 2} added and ${CHANGES / 2} removed`);
    }
    samples.import.push(imported);
    await reset();
  }
  reply({
    entries: ENTRIES,
    listBytes,
    feedLines: feedLines.length,
    changes: CHANGES,
    redisVersion: (await redis.info('server')).match(/redis_version:(\S+)/)?.[1],
    commands: Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, stats(values)])),
  });
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(folder, { recursive: true, force: true });
}
