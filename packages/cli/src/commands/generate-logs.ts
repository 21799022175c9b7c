/** `sluice generate-logs`: writes a realistic access log (see src/tune/generate.ts) for trying `sluice tune`. */
import { SluiceError } from '@sluice/core';
import type { Command } from 'commander';
import { generateLogs } from '../tune/generate.js';

function integer(text: string, field: string, min: number): number {
  const value = Number(text);
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a whole number of at least ${min}, got ${JSON.stringify(text)}`);
  }
  return value;
}

export function registerGenerateLogs(program: Command): void {
  program
    .command('generate-logs')
    .description('Write a realistic access log: heavy-tailed users, abusers, a bursty bot, IPv6 and anonymous clients')
    .requiredOption('--lines <n>', 'lines to write')
    .option('--format <format>', 'json or combined', 'json')
    .option('--seed <n>', 'the same seed writes the same log', '1')
    .option('--users <n>', 'distinct signed-in users (default: lines / 100, 50 to 200,000)')
    .option('--start <time>', 'time of the first line, ISO 8601', '2024-05-01T00:00:00Z')
    .option('--rate <n>', 'average requests per second', '500')
    .option('--gzip', 'gzip the output')
    .option('-o, --output <file>', 'write to a file instead of standard output')
    .action(
      async (flags: {
        lines: string;
        format: string;
        seed: string;
        users?: string;
        start: string;
        rate: string;
        gzip?: boolean;
        output?: string;
      }) => {
        const start = Date.parse(flags.start);
        if (!Number.isFinite(start))
          throw new SluiceError(
            'INVALID_OPTION',
            `--start must be an ISO 8601 time such as 2024-05-01T00:00:00Z, got ${JSON.stringify(flags.start)}`,
          );
        await generateLogs({
          lines: integer(flags.lines, '--lines', 0),
          format: flags.format as 'json' | 'combined',
          seed: integer(flags.seed, '--seed', Number.MIN_SAFE_INTEGER),
          users: flags.users === undefined ? undefined : integer(flags.users, '--users', 1),
          start,
          ratePerSecond: integer(flags.rate, '--rate', 1),
          gzip: flags.gzip === true,
          output: flags.output ?? process.stdout,
        });
      },
    );
}
