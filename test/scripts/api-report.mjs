#!/usr/bin/env node
// The API report of each export of the package in the current directory (its `check:api` and `api:update`
// scripts): @microsoft/api-extractor reads the tsup-built type entry of every `exports` key (`.`, `./store`, ...)
// with the repository's shared settings (api-extractor.json at the root) and writes what it exports, types
// included, to api/<entry>.api.md (`.` is `index`, `./store` is `store`). Those files are checked in, so a change
// to the public surface is a diff that a review sees.
//   check (default): fails when a report differs from the built types, printing the difference and the command
//                    that rewrites it; also when a report has no export left or an export has no report yet.
//   --update:        rewrites the reports (and removes those of exports that are gone).
// Builds nothing: it reads dist/, so build the package (and what it depends on) first.
// Usage: from a package directory, `node <root>/test/scripts/api-report.mjs [--update]`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const pkgDir = process.cwd();
const update = process.argv.includes('--update');
const manifestPath = join(pkgDir, 'package.json');
if (!existsSync(manifestPath)) {
  console.error(`api-report: no package.json in ${pkgDir}; run it from a package directory`);
  process.exit(1);
}
const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
const reportDir = join(pkgDir, 'api');
const shown = (path) => relative(root, path) || '.';
const updateCommand = `pnpm --filter ${manifest.name} api:update   (or \`pnpm api:update\` for every package)`;

/** One report per export that has types: `.` -> index, `./store` -> store, `./a/b` -> a-b. */
function entries() {
  const found = [];
  for (const [key, value] of Object.entries(manifest.exports ?? {})) {
    const types = value?.import?.types ?? value?.types;
    if (typeof types !== 'string') continue;
    const name = key === '.' ? 'index' : key.replace(/^\.\//, '').replaceAll('/', '-');
    found.push({ key, name, types: join(pkgDir, types) });
  }
  return found;
}

const problems = [];
const list = entries();
if (list.length === 0) problems.push('package.json has no export with types to report on');
const missing = list.filter(({ types }) => !existsSync(types));
if (missing.length > 0) {
  console.error(
    `api-report: ${manifest.name} is not built (${missing.map(({ types }) => shown(types)).join(', ')} missing).\n` +
      `Build it first: pnpm --filter ${manifest.name}... build`,
  );
  process.exit(1);
}

const base = ExtractorConfig.loadFile(join(root, 'api-extractor.json'));
const scratch = mkdtempSync(join(tmpdir(), 'sluice-api-report-'));
try {
  if (update) mkdirSync(reportDir, { recursive: true });
  for (const entry of list) report(entry);
  // A report whose export is gone would otherwise sit there describing an API nobody ships.
  const expected = new Set(list.map(({ name }) => `${name}.api.md`));
  const stale = existsSync(reportDir) ? readdirSync(reportDir).filter((file) => file.endsWith('.api.md') && !expected.has(file)) : [];
  for (const file of stale) {
    if (update) {
      rmSync(join(reportDir, file));
      console.log(`api-report: removed ${shown(join(reportDir, file))} (no export of that name any more)`);
    } else {
      problems.push(`${shown(join(reportDir, file))} reports an export package.json no longer has`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

if (problems.length > 0) {
  console.error(`\napi-report: ${manifest.name} FAILED`);
  for (const problem of problems) console.error(`  - ${problem}`);
  if (!update) console.error(`If the change is intended, rebuild and rewrite the reports, then commit them:\n  ${updateCommand}`);
  process.exit(1);
}
console.log(
  `api-report: ${manifest.name} ${update ? 'reports written' : 'matches its reports'} (${list.map(({ name }) => `api/${name}.api.md`).join(', ')})`,
);

/**
 * api-extractor marks every declaration with its release stage and whether it has a doc comment. sluice has no
 * release stages (everything exported is public) and a doc-only edit is not an API change, so those marks are left
 * out: the report is the signatures and api-extractor's findings about them (a forgotten export, say).
 */
function withoutMarks(text) {
  const kept = [];
  for (const line of text.split('\n')) {
    if (/^\s*\/\/ (@public ?)?(\(undocumented\))?$/.test(line) && line.trim() !== '//') {
      // The blank comment line api-extractor puts between findings and marks goes with the marks.
      if (kept.at(-1)?.trim() === '//') kept.pop();
      continue;
    }
    kept.push(line);
  }
  return kept.join('\n');
}

function report({ key, name, types }) {
  const made = join(scratch, name);
  const configObject = {
    ...base,
    projectFolder: pkgDir,
    mainEntryPointFilePath: types,
    compiler: {
      ...base.compiler,
      overrideTsconfig: {
        ...base.compiler.overrideTsconfig,
        files: [types],
      },
    },
    apiReport: { ...base.apiReport, reportFileName: name, reportFolder: made, reportTempFolder: join(made, 'temp') },
  };
  mkdirSync(made, { recursive: true });
  const config = ExtractorConfig.prepare({
    configObject,
    configObjectFullPath: join(root, 'api-extractor.json'),
    packageJsonFullPath: manifestPath,
  });
  Extractor.invoke(config, {
    localBuild: true,
    messageCallback(message) {
      message.handled = true;
      // The report is compared below; any other warning or error (a type that does not resolve) is a failure.
      if (message.messageId.startsWith('console-api-report')) return;
      if (message.logLevel === 'error' || message.logLevel === 'warning')
        problems.push(`${key}: ${message.formatMessageWithLocation(pkgDir)}`);
    },
  });
  const fresh = join(made, `${name}.api.md`);
  if (!existsSync(fresh)) {
    problems.push(`${key}: api-extractor wrote no report`);
    return;
  }
  const text = withoutMarks(readFileSync(fresh, 'utf8'));
  const reportFile = join(reportDir, `${name}.api.md`);
  const old = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : undefined;
  if (update) {
    if (old !== text) {
      writeFileSync(reportFile, text);
      console.log(`api-report: wrote ${shown(reportFile)}`);
    }
    return;
  }
  if (old === undefined) {
    problems.push(`${key}: no report yet (${shown(reportFile)})`);
  } else if (old !== text) {
    writeFileSync(fresh, text);
    const entry = key === '.' ? manifest.name : `${manifest.name}/${key.slice(2)}`;
    console.error(`api-report: the public API of ${entry} (${shown(types)}) differs from ${shown(reportFile)}:\n`);
    console.error(difference(reportFile, fresh));
    problems.push(`${key}: ${shown(reportFile)} is out of date`);
  }
}

/** A unified diff of the checked-in report (a/) against the built one (b/). */
function difference(checkedIn, built) {
  const result = spawnSync('git', ['diff', '--no-index', '--no-color', '--no-prefix', checkedIn, built], { encoding: 'utf8' });
  if (result.error !== undefined) return `(git is not available to show the difference: compare ${checkedIn} with ${built})`;
  // Drop git's header (it names a temp file); the hunks say what changed.
  return result.stdout.replace(/^[\s\S]*?(?=^@@)/m, '').trimEnd();
}
