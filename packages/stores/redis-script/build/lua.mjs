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
// for the script. Tokens are never joined or reordered, and no line is split or merged, so what Redis runs is the
// files' code, line for line, and the line maps still name the file and line each shipped line came from. Last,
// each local (a name a `local`, a parameter list or a `for` declares) ships under a short name (shortNames() and
// renameLocals() below: `local reset_at=now` ships as `local l=g`), another third of the script's bytes and a
// sixth of it gzipped. luac compiles the same bytecode, debug information aside (a test holds it), and luacheck
// lints the texts as the files write them (`readable`); a Lua error Redis reports names the short local, at a
// line the maps trace back to its file.
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

// Lua's reserved words, and the globals a script may read (Lua 5.1's standard library and what Redis adds,
// .luacheckrc's std and read_globals): never renamed, never given as a short name.
const KEYWORDS = new Set(
  'and break do else elseif end false for function if in local nil not or repeat return then true until while'.split(' '),
);
const GLOBALS = new Set(
  [
    '_G _VERSION assert collectgarbage error getfenv getmetatable ipairs load loadstring module next pairs pcall print',
    'rawequal rawget rawset require select setfenv setmetatable tonumber tostring type unpack xpcall gcinfo newproxy',
    'coroutine debug io math os package string table redis KEYS ARGV cjson cmsgpack bit struct self',
  ]
    .join(' ')
    .split(' '),
);

/**
 * Short names for the locals of compacted texts (compact() output): one set for all of them, so texts that share
 * code (the script and the library wrapping it) still share it, byte for byte. A name qualifies when a `local`
 * statement, a function's parameter list or a `for` declares it and it is neither a keyword nor a global a script
 * may read; the most used get the shortest names, and a name is kept when no shorter one is free. A short name is
 * never a word that already appears in the texts (a global, a field, another local), so the renaming is one to
 * one and captures nothing: the code Redis compiles is the same (a test compares luac's stripped bytecode), only
 * the names differ, and the readable text is what luacheck lints.
 * @returns {Map<string, string>} each renamed local and its short name
 */
export function shortNames(texts) {
  const uses = new Map();
  const words = new Set();
  for (const lines of texts) {
    for (const { tokens } of tokenized(lines)) {
      tokens.forEach((token, i) => {
        if (!WORD.test(token[0]) || /[0-9]/.test(token[0])) return;
        words.add(token);
        if (declares(tokens, i)) uses.set(token, uses.get(token) ?? 0);
      });
    }
  }
  for (const lines of texts) {
    for (const { tokens, renamable } of tokenized(lines)) {
      tokens.forEach((token, i) => {
        if (uses.has(token) && renamable[i]) uses.set(token, uses.get(token) + 1);
      });
    }
  }
  const names = new Map();
  const free = freeNames(words);
  // Most used first; ties in the order of first use (Map order), so the names are stable from build to build.
  for (const [name] of [...uses].filter(([n]) => !KEYWORDS.has(n) && !GLOBALS.has(n)).sort((a, b) => b[1] - a[1])) {
    const short = free.peek();
    if (short.length >= name.length) continue;
    names.set(name, free.next());
  }
  return names;
}

/** Lines with their tokens, and for each token whether it is a variable (not a field after `.`/`:`, not a table key). */
function tokenized(lines) {
  const open = [];
  return lines.map((line) => {
    const tokens = line.text.startsWith('#!') ? [] : lex(line.text, line);
    const renamable = tokens.map((token, i) => {
      const before = tokens[i - 1];
      const key = open.at(-1) === '{' && tokens[i + 1] === '=';
      if ('{(['.includes(token)) open.push(token);
      else if ('})]'.includes(token)) open.pop();
      return WORD.test(token[0]) && before !== '.' && before !== ':' && !key;
    });
    return { line, tokens, renamable };
  });
}

/** Whether tokens[i] is a name being declared: in a `local` list, a `local function`, a parameter list or a `for`. */
function declares(tokens, i) {
  let j = i - 1;
  while (j >= 1 && tokens[j] === ',' && WORD.test(tokens[j - 1][0])) j -= 2;
  const before = tokens[j];
  if (before === 'local' || before === 'for' || (before === 'function' && tokens[j - 1] === 'local')) return true;
  return before === '(' && (tokens[j - 1] === 'function' || tokens[j - 2] === 'function');
}

/** Candidate short names in order of length (a-z, A-Z, then two characters), skipping keywords and taken words. */
function freeNames(taken) {
  const first = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const candidates = (function* () {
    for (const a of first) yield a;
    for (const a of first) for (const b of `${first}0123456789_`) yield a + b;
    for (let n = 0; ; n++) yield `_${n}`;
  })();
  let ahead;
  const advance = () => {
    do ahead = candidates.next().value;
    while (KEYWORDS.has(ahead) || GLOBALS.has(ahead) || taken.has(ahead));
  };
  advance();
  return {
    peek: () => ahead,
    next() {
      const name = ahead;
      advance();
      return name;
    },
  };
}

/**
 * Compacted lines with their locals renamed (shortNames()): each variable token in `names` becomes its short name,
 * every other token and every line stays; the result is re-lexed and must give the same tokens, renamed.
 */
export function renameLocals(lines, names) {
  return tokenized(lines).map(({ line, tokens, renamable }) => {
    if (tokens.length === 0) return line;
    const renamed = tokens.map((token, i) => (renamable[i] && names.has(token) ? names.get(token) : token));
    let out = '';
    renamed.forEach((token, i) => {
      if (i > 0 && needsSpace(renamed[i - 1], token)) out += ' ';
      out += token;
    });
    if (lex(out, line).join('\n') !== renamed.join('\n'))
      throw new Error(`${line.file}:${line.line}: renaming the line's locals would change its tokens`);
    return { ...line, text: out };
  });
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
  const fullLibraryLines = expand(dir, 'library.lua');
  // The library binds the script's locals on its first call (see library.lua): both must name the same ones.
  const locals = /^local (.+?) = (.+)$/.exec(fullScriptLines[0].text);
  const fullLibrary = text(fullLibraryLines);
  if (locals === null || !fullLibrary.includes(`\nlocal ${locals[1]}\n`) || !fullLibrary.includes(`\n  ${locals[1]} = ${locals[2]}\n`)) {
    throw new Error(
      "script.lua's first line (local names = standard functions) and library.lua's declaration and bind() must list the same names and functions",
    );
  }
  // The script and the library share one set of short names, so the library's body stays the script's text.
  const readable = {
    script: compact(fullScriptLines),
    library: compact(fullLibraryLines),
    lease: compact(expand(dir, 'lease.lua')),
    config: compact(expand(dir, 'config.lua')),
    analytics: compact(expand(dir, 'analytics.lua')),
    analyticsRead: compact(expand(dir, 'analytics-read.lua')),
    denyChange: compact(expand(dir, 'deny-change.lua')),
    denyRead: compact(expand(dir, 'deny-read.lua')),
  };
  const limitNames = shortNames([readable.script, readable.library]);
  const names = { script: limitNames, library: limitNames };
  for (const name of ['lease', 'config', 'analytics', 'analyticsRead', 'denyChange', 'denyRead'])
    names[name] = shortNames([readable[name]]);
  const ship = (name) => renameLocals(readable[name], names[name]);
  const scriptLines = ship('script');
  const script = text(scriptLines);
  const sha1 = createHash('sha1').update(script).digest('hex');
  const version = sha1.slice(0, 12);
  const withVersion = (lines) => lines.map((l) => ({ ...l, text: l.text.replaceAll('@VERSION@', version) }));
  const libraryLines = withVersion(ship('library'));
  const lease = text(ship('lease'));
  const origins = (lines) => lines.map(({ file, line }) => ({ file, line }));
  return {
    script,
    sha1,
    functionName: `sluice_limit_${version}`,
    library: text(libraryLines),
    lease,
    leaseSha1: createHash('sha1').update(lease).digest('hex'),
    config: text(ship('config')),
    analytics: text(ship('analytics')),
    analyticsRead: text(ship('analyticsRead')),
    denyChange: text(ship('denyChange')),
    denyRead: text(ship('denyRead')),
    // Every shipped text and its readable twin have the same lines: one map serves both.
    maps: {
      script: origins(readable.script),
      library: origins(readable.library),
      lease: origins(readable.lease),
      config: origins(readable.config),
      analytics: origins(readable.analytics),
      analyticsRead: origins(readable.analyticsRead),
      denyChange: origins(readable.denyChange),
      denyRead: origins(readable.denyRead),
    },
    readable: {
      script: text(readable.script),
      library: text(withVersion(readable.library)),
      lease: text(readable.lease),
      config: text(readable.config),
      analytics: text(readable.analytics),
      analyticsRead: text(readable.analyticsRead),
      denyChange: text(readable.denyChange),
      denyRead: text(readable.denyRead),
    },
    names: Object.fromEntries(Object.entries(names).map(([name, map]) => [name, Object.fromEntries(map)])),
  };
}

/** The virtual module's source: the texts and names, no line maps. */
export function virtualModule(dir = LUA_DIR) {
  const { script, sha1, functionName, library, lease, leaseSha1, config, analytics, analyticsRead, denyChange, denyRead } = assemble(dir);
  return `export const script = ${JSON.stringify(script)};
export const sha1 = ${JSON.stringify(sha1)};
export const functionName = ${JSON.stringify(functionName)};
export const library = ${JSON.stringify(library)};
export const leaseScript = ${JSON.stringify(lease)};
export const leaseSha1 = ${JSON.stringify(leaseSha1)};
export const configScript = ${JSON.stringify(config)};
export const analyticsScript = ${JSON.stringify(analytics)};
export const analyticsReadScript = ${JSON.stringify(analyticsRead)};
export const denyChangeScript = ${JSON.stringify(denyChange)};
export const denyReadScript = ${JSON.stringify(denyRead)};
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
