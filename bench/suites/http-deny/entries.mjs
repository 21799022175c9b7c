// The deny list both scripts of the http-deny suite use: 100,000 entries, mixed as an operator's list grows
// (single IPv4 addresses, IPv4 /24s, IPv6 /56s and /48s, signed-in identities), and the clients that request: none
// of them on the list, so every request pays for the whole lookup and then for its rate decision.

/** `count` entries: 40% IPv4 addresses, 10% IPv4 /24s (100.64.0.0/10), 20% IPv6 /56s, 10% IPv6 /48s, 20% identities. */
export function denyEntries(count = 100_000) {
  const entries = [];
  for (let i = 0; entries.length < count; i++) {
    const kind = i % 10;
    const k = Math.floor(i / 10); // distinct per kind, so every match is distinct (core keeps one entry per match)
    if (kind < 4) entries.push({ match: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` });
    else if (kind < 5) entries.push({ match: `100.${64 + ((k >> 8) & 63)}.${k & 255}.0/24`, reason: 'scraper' });
    else if (kind < 7) entries.push({ match: `2001:db8:${(i & 0xffff).toString(16)}:${((i >> 16) & 255).toString(16)}00::/56` });
    else if (kind < 8) entries.push({ match: `2001:db9:${k.toString(16)}::/48`, until: Date.now() + 86_400_000 });
    else entries.push({ match: `user:${i}`, reason: 'abuse' });
  }
  return entries;
}

/** `count` requesting clients, none denied: three in four IPv4 (198.18.0.0/15), one in four IPv6 (2001:db8:ffff::/48). */
export function clientAddresses(count = 10_000) {
  const addresses = [];
  for (let i = 0; i < count; i++) {
    addresses.push(i % 4 === 3 ? `2001:db8:ffff:${(i & 0xff).toString(16)}00::${i.toString(16)}` : `198.18.${(i >> 8) & 255}.${i & 255}`);
  }
  return addresses;
}
