/**
 * Reading the proxy chain headers. Both return the hops left to right (client first, nearest proxy last), as
 * raw node text still to be parsed by `parseAddressText`; `null` marks a hop that names no address (an RFC 7239
 * element without `for`, or `for=unknown` / an obfuscated `_id`). `undefined` means the header is malformed as a
 * whole and no part of it can be trusted.
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

/**
 * RFC 7239 `Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"`.
 * Parameter names are case-insensitive; values are tokens or quoted strings (with `\` escapes). Optional
 * whitespace around `,` and `;` is tolerated. A second `for` in one element, a broken quote or a stray character
 * makes the whole header malformed.
 */
export function parseForwarded(value: string): Array<string | null> | undefined {
  const hops: Array<string | null> = [];
  let i = 0;
  const length = value.length;
  let forValue: string | null = null;
  let sawFor = false;
  let elementEmpty = true;

  const skipSpace = () => {
    while (i < length && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  const closeElement = () => {
    if (!elementEmpty) hops.push(sawFor ? forValue : null);
    forValue = null;
    sawFor = false;
    elementEmpty = true;
  };

  while (true) {
    skipSpace();
    if (i >= length) break;
    if (value[i] === ',') {
      closeElement();
      i++;
      continue;
    }
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
    if (i < length && value[i] !== ';' && value[i] !== ',') return undefined;
    elementEmpty = false;
    if (name === 'for') {
      if (sawFor) return undefined;
      sawFor = true;
      const lower = pairValue.toLowerCase();
      forValue = lower === 'unknown' || pairValue.startsWith('_') ? null : pairValue;
    }
  }
  closeElement();
  return hops;
}
