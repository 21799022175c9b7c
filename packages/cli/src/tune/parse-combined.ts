/**
 * The common and combined log formats (Apache, nginx): `host ident authuser [10/Oct/2000:13:55:36 -0700]
 * "GET / HTTP/1.1" 200 2326 ["referer" "agent"]`. The identity is `authuser` when it is not `-`, else `host`;
 * a host that is a name rather than an address (HostnameLookups on) has no identity and is counted as such.
 * Only the fields before the request are read, so what follows it (a combined log's referer and agent, or
 * fields a site appended) does not matter.
 */
import type { IdentityTable } from './identity.js';
import { BAD_TIME, NO_IDENTITY, NOT_ACCESS_LOG, type LineParser } from './line-result.js';
import { parseClfTime } from './timestamp.js';

export class CombinedLineParser implements LineParser {
  time = 0;

  constructor(private readonly identities: IdentityTable) {}

  newText(): void {}

  parse(text: string, start: number, end: number): number {
    const hostEnd = text.indexOf(' ', start);
    if (hostEnd <= start || hostEnd >= end) return NOT_ACCESS_LOG;
    const open = text.indexOf(' [', hostEnd);
    if (open === -1 || open >= end) return NOT_ACCESS_LOG;
    // The time is 26 characters; look for the bracket there first, and anywhere on the line only if not.
    let close = open + 28;
    if (text.charCodeAt(close) !== 93) {
      close = text.indexOf(']', open);
      if (close === -1 || close >= end) return NOT_ACCESS_LOG;
    }
    if (text.charCodeAt(close + 1) !== 32 || text.charCodeAt(close + 2) !== 34) return NOT_ACCESS_LOG;
    // Between host and time: `ident authuser`. authuser may itself hold spaces, so it is all after the first one.
    const identEnd = text.indexOf(' ', hostEnd + 1);
    if (identEnd === -1 || identEnd > open) return NOT_ACCESS_LOG;
    const time = parseClfTime(text, open + 2, close);
    if (Number.isNaN(time)) return BAD_TIME;
    const userStart = identEnd + 1;
    let identity: number;
    if (open > userStart && !(open === userStart + 1 && text.charCodeAt(userStart) === 45)) {
      identity = this.identities.userAt(text, userStart, open);
    } else {
      identity = this.identities.ipAt(text, start, hostEnd);
      if (identity < 0) return NO_IDENTITY;
    }
    this.time = time;
    return identity;
  }
}
