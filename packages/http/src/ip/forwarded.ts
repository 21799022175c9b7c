/**
 * Reading the proxy chain headers. Both return the hops left to right (client first, nearest proxy last), as
 * raw node text still to be parsed by `parseAddressText`; `null` marks a hop that names no address (an RFC 7239
 * element without `for`, or `for=unknown` / an obfuscated `_id`). Each hop is read on its own, right to left, so
 * what a client prepends cannot spoil the entries the trusted proxies appended after it.
 */

/** `X-Forwarded-For: client, proxy1, proxy2`. Empty list elements are ignored, as HTTP list syntax allows. */
export function parseXForwardedFor(value: string): Array<string | null> {
  const hops: Array<string | null> = [];
  for (const part of value.split(',')) {
    const text = part.trim();
    if (text.length > 0) hops.push(text);
  }
  return hops;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** An RFC 7239 element that does not parse; it only matters if the walk from the right reaches it. */
export interface MalformedHop {
  readonly malformed: string;
}

/**
 * RFC 7239 `Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"`, one entry per
 * element. Parameter names are case-insensitive; values are tokens or quoted strings (with `\` escapes). Optional
 * whitespace around `,` and `;` is tolerated. Elements are delimited from the right, the way the chain is read: each
 * trusted proxy appends a well-formed element after whatever it received, so a client's broken element (a second
 * `for`, a broken quote, a stray character) spoils only itself and whatever lies left of it, never the proxies'
 * elements to its right. It comes back as a `MalformedHop`, rejected if the walk from the right reaches it.
 */
export function parseForwarded(value: string): Array<string | null | MalformedHop> {
  const hops: Array<string | null | MalformedHop> = [];
  let end = value.length;
  while (true) {
    const comma = elementStart(value, end);
    if (comma === UNTERMINATED) {
      hops.push({ malformed: value.slice(0, end).trim() });
      break;
    }
    const text = value.slice(comma + 1, end);
    // An empty element (`a, , b`, or only `;`) is no hop, as HTTP list syntax allows.
    if (/[^\s;]/.test(text)) {
      const node = parseElement(text);
      hops.push(node === undefined ? { malformed: text.trim() } : node);
    }
    if (comma < 0) break;
    end = comma;
  }
  return hops.reverse();
}

const UNTERMINATED = -2;

/**
 * Index of the `,` that opens the element ending at `end` (-1: the element starts the header), scanning right to
 * left past quoted strings. A `"` preceded by an odd run of backslashes is escaped. `UNTERMINATED`: a quote that
 * never opens, so the element's start cannot be known and everything left of `end` is one broken element. The
 * element found is still checked left to right by `parseElement`; a quoted string of a well-formed element never
 * yields a shorter element that parses (its quotes would pair the other way round).
 */
function elementStart(value: string, end: number): number {
  let i = end - 1;
  while (i >= 0) {
    const ch = value[i];
    if (ch === ',') return i;
    if (ch === '"' && !escaped(value, i)) {
      i--;
      while (i >= 0 && !(value[i] === '"' && !escaped(value, i))) i--;
      if (i < 0) return UNTERMINATED;
    }
    i--;
  }
  return -1;
}

function escaped(value: string, quote: number): boolean {
  let run = 0;
  for (let i = quote - 1; i >= 0 && value[i] === '\\'; i--) run++;
  return run % 2 === 1;
}

/** One element, `pair *( ";" pair )`: its `for` node (`null` when it names none), or undefined when malformed. */
function parseElement(value: string): string | null | undefined {
  let i = 0;
  const length = value.length;
  let forValue: string | null = null;
  let sawFor = false;
  const skipSpace = () => {
    while (i < length && (value[i] === ' ' || value[i] === '\t')) i++;
  };

  while (true) {
    skipSpace();
    if (i >= length) break;
    if (value[i] === ';') {
      i++;
      continue;
    }
    // forwarded-pair = token "=" value
    const nameStart = i;
    while (i < length && value[i] !== '=' && value[i] !== ';' && value[i] !== ',' && value[i] !== ' ') i++;
    const name = value.slice(nameStart, i).toLowerCase();
    if (!TOKEN.test(name) || value[i] !== '=') return undefined;
    i++;
    let pairValue: string;
    if (value[i] === '"') {
      i++;
      let text = '';
      let closed = false;
      while (i < length) {
        const ch = value[i]!;
        if (ch === '\\') {
          if (i + 1 >= length) return undefined;
          text += value[i + 1];
          i += 2;
        } else if (ch === '"') {
          closed = true;
          i++;
          break;
        } else {
          text += ch;
          i++;
        }
      }
      if (!closed) return undefined;
      pairValue = text;
    } else {
      const valueStart = i;
      while (i < length && value[i] !== ';' && value[i] !== ',' && value[i] !== ' ' && value[i] !== '\t') i++;
      pairValue = value.slice(valueStart, i);
      if (!TOKEN.test(pairValue)) return undefined;
    }
    skipSpace();
    if (i < length && value[i] !== ';') return undefined;
    if (name === 'for') {
      if (sawFor) return undefined;
      sawFor = true;
      const lower = pairValue.toLowerCase();
      forValue = lower === 'unknown' || pairValue.startsWith('_') ? null : pairValue;
    }
  }
  return sawFor ? forValue : null;
}
