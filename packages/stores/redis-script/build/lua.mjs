// Build step for the Lua executor: reads src/lua/*.lua, assembles the EVAL script and the Redis Function library
// from them, and computes the script's SHA-1 (node:crypto, at build time: nothing is hard-coded). tsup (esbuild)
// and vitest (vite) both load the result as the virtual module `virtual:sluice-lua` through the plugins below,
// and `pnpm lint` runs luacheck on the assembled texts (scripts/luacheck.mjs), reporting each warning at its line
// in the .lua file it came from.
//
// Assembly: a line `-- #include <file>` is replaced by that file; `-- #include steps` (in prelude.lua) by one
// `if code == '<code>' then` arm per file of steps/, indented into step_for's chain, in the order of STEPS.
// `@VERSION@` is the first 12 hex digits of the script's SHA-1. A file's leading `---` lines document it in this
// repository and are not shipped. What ships is then compacted (compact() below): full-line comments and blank
// lines are dropped, and each line loses its indentation, its trailing comment and every space Lua does not need
// between two tokens (`local a = b + 1` ships as `local a=b+1`), over a third of the bytes an edge bundle carries
// for the script. Tokens are never changed, joined or reordered, and no line is split or merged, so what Redis
// runs is the files' code, line for line, and the line maps still name the file and line each shipped line came
// from.
// lease.lua is a second EVAL script (concurrency leases), assembled the same way, with its own SHA-1.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'lua');
export const VIRTUAL_ID = 'virtual:sluice-lua';

/** The spec code of each step (arguments.ts writes these codes) and its file in steps/, in dispatch order. */
export const STEPS = [
  ['fw', 'fixed-window'],
  ['swl', 'sliding-window-log'],
  ['swc', 'sliding-window-counter'],
  ['tbs', 'token-bucket-smooth'],
  ['tbi', 'token-bucket-interval'],
  ['lb', 'leaky-bucket'],
  ['gcra', 'gcra'],
];

/** A file's lines, each with where it came from, its `---` documentation header dropped. */
function source(dir, name) {
  const lines = readFileSync(join(dir, name), 'utf8').split('\n');
  if (lines.at(-1) !== '') throw new Error(`${name} must end with a newline`);
  lines.pop();
  let first = 0;
  while (first < lines.length && lines[first].startsWith('---')) first++;
  return lines.slice(first).map((text, i) => ({ text, file: name, line: first + i + 1 }));
}

function expand(dir, name, seen = []) {
  if (seen.includes(name)) throw new Error(`${[...seen, name].join(' -> ')}: circular #include`);
  const out = [];
  for (const entry of source(dir, name)) {
    const include = /^\s*-- #include (\S+)$/.exec(entry.text);
    if (include === null) out.push(entry);
    else if (include[1] === 'steps') out.push(...stepChain(dir, entry));
    else out.push(...expand(dir, include[1], [...seen, name]));
  }
  return out;
}

function stepChain(dir, at) {
  const files = readdirSync(join(dir, 'steps'))
    .filter((f) => f.endsWith('.lua'))
    .sort();
  const known = STEPS.map(([, file]) => `${file}.lua`).sort();
  if (JSON.stringify(files) !== JSON.stringify(known)) {
    throw new Error(`src/lua/steps holds ${files.join(', ')} but build/lua.mjs STEPS names ${known.join(', ')}: list each step once`);
  }
  const generated = (text) => ({ text, file: at.file, line: at.line });
  const out = [];
  STEPS.forEach(([code, file], i) => {
    out.push(generated(`  ${i === 0 ? 'if' : 'elseif'} code == '${code}' then`));
    for (const entry of source(dir, `steps/${file}.lua`)) out.push({ ...entry, text: entry.text === '' ? '' : `    ${entry.text}` });
  });
  out.push(generated('  else'), generated('    return nil'), generated('  end'));
  return out;
}

const text = (lines) => lines.map((l) => `${l.text}\n`).join('');

/**
 * The lines as they ship: full-line comments and blank lines dropped, each other line squeezed (squeeze() below).
 * The build refuses a line with a long string or comment (`[[ ... ]]`, `[=[ ... ]=]`) or one that continues a
 * quoted string (a trailing backslash) rather than rewrite them: squeezing reads one line at a time.
 */
export function compact(lines) {
  return lines.flatMap((line) => {
    if (/\[=*\[/.test(line.text) || line.text.endsWith('\\')) {
      throw new Error(
        `${line.file}:${line.line}: a long string or comment ([[, [=[) or a continued string cannot be compacted; write it on one line`,
      );
    }
    const trimmed = line.text.trim();
    return trimmed === '' || trimmed.startsWith('--') ? [] : [{ ...line, text: squeeze(trimmed, line) }];
  });
}

/**
 * One line's code without the spaces Lua does not need: between two tokens a space stays only where dropping it
 * would make them read as one (`local x`, `a - -b`, `1 ..s`, `x = ==`-like pairs); a trailing `--` comment goes.
 * Quoted strings are copied as they are. The result is lexed again and must give the same tokens, or the build
 * fails naming the line: a squeeze that could change the code never ships.
 */
function squeeze(text, at) {
  const tokens = lex(text, at);
  let out = '';
  tokens.forEach((token, i) => {
    if (i > 0 && needsSpace(tokens[i - 1], token)) out += ' ';
    out += token;
  });
  if (lex(out, at).join('\n') !== tokens.join('\n')) throw new Error(`${at.file}:${at.line}: squeezing the line would change its tokens`);
  return out;
}

const WORD = /[A-Za-z0-9_]/;
const OPERATORS = ['...', '..', '==', '~=', '<=', '>='];

/** Whether two tokens would run together, or read as other tokens, without a space between them. */
function needsSpace(before, after) {
  const last = before.at(-1);
  const first = after[0];
  if (WORD.test(last) && WORD.test(first)) return true; // names, keywords and numbers
  if (last === '-' && first === '-') return true; // `a - -b` is not a comment
  if (/[0-9]/.test(before[0]) && first === '.') return true; // `1 ..s` is not the number `1..`
  if (last === '.' && /[0-9.]/.test(first)) return true; // `.. .5`, `.. ..`
  if ('=<>~'.includes(last) && first === '=') return true;
  return last === '[' && (first === '[' || first === '='); // a long bracket opens with `[[` or `[=`
}

/**
 * A line's tokens, its trailing comment left out: quoted strings whole, runs of name and number characters (a
 * number's fraction point and exponent sign included), the operators of more than one character, and each other
 * character on its own. Coarser than Lua's lexer, and enough for squeeze(): a space is only dropped between tokens
 * that needsSpace() does not keep apart.
 */
function lex(text, at) {
  const tokens = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const operator = OPERATORS.find((o) => text.startsWith(o, i));
    if (c === ' ' || c === '\t') {
      i++;
    } else if (text.startsWith('--', i)) {
      break;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new Error(`${at.file}:${at.line}: a string that does not end on its line cannot be compacted`);
      tokens.push(text.slice(i, j + 1));
      i = j + 1;
    } else if (WORD.test(c)) {
      const number = /[0-9]/.test(c);
      let j = i + 1;
      while (
        j < text.length &&
        (WORD.test(text[j]) || (number && (text[j] === '.' || ('+-'.includes(text[j]) && /[eE]/.test(text[j - 1])))))
      )
        j++;
      tokens.push(text.slice(i, j));
      i = j;
    } else if (operator !== undefined) {
      tokens.push(operator);
      i += operator.length;
    } else {
      tokens.push(c);
      i++;
    }
  }
  return tokens;
}

/** compact() of a whole text (tests: what a file looks like as it ships). */
export function compactText(source) {
  return text(compact(source.split('\n').map((t) => ({ text: t, file: 'text', line: 0 }))));
}

/**
 * The EVAL script, the Function library and the names derived from the script's digest, and the lease script and
 * its digest, each text with a line map (`map[i]` is where line i + 1 came from).
 */
export function assemble(dir = LUA_DIR) {
  const fullScriptLines = expand(dir, 'script.lua');
  const scriptLines = compact(fullScriptLines);
  const script = text(scriptLines);
  const sha1 = createHash('sha1').update(script).digest('hex');
  const version = sha1.slice(0, 12);
  const fullLibraryLines = expand(dir, 'library.lua').map((l) => ({ ...l, text: l.text.replaceAll('@VERSION@', version) }));
  // The library binds the script's locals on its first call (see library.lua): both must name the same ones.
  const locals = /^local (.+?) = (.+)$/.exec(fullScriptLines[0].text);
  const fullLibrary = text(fullLibraryLines);
  if (locals === null || !fullLibrary.includes(`\nlocal ${locals[1]}\n`) || !fullLibrary.includes(`\n  ${locals[1]} = ${locals[2]}\n`)) {
    throw new Error(
      "script.lua's first line (local names = standard functions) and library.lua's declaration and bind() must list the same names and functions",
    );
  }
  const libraryLines = compact(fullLibraryLines);
  const library = text(libraryLines);
  const leaseLines = compact(expand(dir, 'lease.lua'));
  const lease = text(leaseLines);
  const configLines = compact(expand(dir, 'config.lua'));
  const config = text(configLines);
  const analyticsLines = compact(expand(dir, 'analytics.lua'));
  const analytics = text(analyticsLines);
  const analyticsReadLines = compact(expand(dir, 'analytics-read.lua'));
  const analyticsRead = text(analyticsReadLines);
  const origins = (lines) => lines.map(({ file, line }) => ({ file, line }));
  return {
    script,
    sha1,
    functionName: `sluice_limit_${version}`,
    library,
    lease,
    leaseSha1: createHash('sha1').update(lease).digest('hex'),
    config,
    analytics,
    analyticsRead,
    maps: {
      script: origins(scriptLines),
      library: origins(libraryLines),
      lease: origins(leaseLines),
      config: origins(configLines),
      analytics: origins(analyticsLines),
      analyticsRead: origins(analyticsReadLines),
    },
  };
}

/** The virtual module's source: the texts and names, no line maps. */
export function virtualModule(dir = LUA_DIR) {
  const { script, sha1, functionName, library, lease, leaseSha1, config, analytics, analyticsRead } = assemble(dir);
  return `export const script = ${JSON.stringify(script)};
export const sha1 = ${JSON.stringify(sha1)};
export const functionName = ${JSON.stringify(functionName)};
export const library = ${JSON.stringify(library)};
export const leaseScript = ${JSON.stringify(lease)};
export const leaseSha1 = ${JSON.stringify(leaseSha1)};
export const configScript = ${JSON.stringify(config)};
export const analyticsScript = ${JSON.stringify(analytics)};
export const analyticsReadScript = ${JSON.stringify(analyticsRead)};
`;
}

/** Every .lua file the texts are built from (for watch mode and cache keys). */
function luaFiles(dir = LUA_DIR) {
  return [...readdirSync(dir).filter((f) => f.endsWith('.lua')), ...readdirSync(join(dir, 'steps')).map((f) => `steps/${f}`)].map((f) =>
    join(dir, f),
  );
}

/** esbuild (tsup) plugin serving `virtual:sluice-lua`. */
export function esbuildLuaPlugin() {
  return {
    name: 'sluice-lua',
    setup(build) {
      build.onResolve({ filter: /^virtual:sluice-lua$/ }, () => ({ path: VIRTUAL_ID, namespace: 'sluice-lua' }));
      build.onLoad({ filter: /.*/, namespace: 'sluice-lua' }, () => ({ contents: virtualModule(), loader: 'js', watchFiles: luaFiles() }));
    },
  };
}

/** vite (vitest) plugin serving `virtual:sluice-lua`. */
export function viteLuaPlugin() {
  const resolved = `\0${VIRTUAL_ID}`;
  return {
    name: 'sluice-lua',
    resolveId: (id) => (id === VIRTUAL_ID ? resolved : undefined),
    load(id) {
      if (id !== resolved) return undefined;
      for (const file of luaFiles()) this.addWatchFile(file);
      return virtualModule();
    },
  };
}
