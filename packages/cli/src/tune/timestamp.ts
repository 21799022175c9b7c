/**
 * Timestamps of log lines as integer epoch milliseconds, the clock the replay runs on. The common shapes are read
 * digit by digit (about ten times faster than Date.parse, which matters at a million lines a second); anything else
 * goes through Date.parse. A time that cannot be read is NaN, and the caller counts the line as malformed.
 */

const DIGIT_0 = 48;

/** Days from 1970-01-01 to the given civil date (proleptic Gregorian), Howard Hinnant's days_from_civil. */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** `n` digits of `text` from `at` as a number, or -1 when one of them is not a digit. */
function digits(text: string, at: number, n: number): number {
  let value = 0;
  for (let i = at; i < at + n; i++) {
    const d = text.charCodeAt(i) - DIGIT_0;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}

function validClock(month: number, day: number, hour: number, minute: number, second: number): boolean {
  // Second 60 (a leap second) is accepted as Date.parse does not; it reads as the next second's first instant.
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 60;
}

/**
 * ISO 8601 / RFC 3339 text (`2024-05-01T12:00:00.123Z`, a space for the T, an offset `+02:00` or `+0200`, 0 to 9
 * fraction digits, truncated to the millisecond). A time without a zone is read as UTC, as log shippers write it.
 */
export function parseIsoTime(text: string, start = 0, end = text.length): number {
  if (end - start >= 19 && text.charCodeAt(start + 4) === 45 && text.charCodeAt(start + 7) === 45 && text.charCodeAt(start + 13) === 58) {
    const sep = text.charCodeAt(start + 10);
    const year = digits(text, start, 4);
    const month = digits(text, start + 5, 2);
    const day = digits(text, start + 8, 2);
    const hour = digits(text, start + 11, 2);
    const minute = digits(text, start + 14, 2);
    const second = digits(text, start + 17, 2);
    if (
      (sep === 84 || sep === 32) &&
      text.charCodeAt(start + 16) === 58 &&
      year >= 0 &&
      month >= 0 &&
      day >= 0 &&
      hour >= 0 &&
      minute >= 0 &&
      second >= 0 &&
      validClock(month, day, hour, minute, second)
    ) {
      let at = start + 19;
      let ms = 0;
      if (at < end && (text.charCodeAt(at) === 46 || text.charCodeAt(at) === 44)) {
        at++;
        let scale = 100;
        const from = at;
        while (at < end) {
          const d = text.charCodeAt(at) - DIGIT_0;
          if (d < 0 || d > 9) break;
          ms += d * scale;
          scale /= 10;
          at++;
        }
        if (at === from) return NaN;
        ms = Math.floor(ms);
      }
      let offsetMinutes = 0;
      if (at < end) {
        const zone = text.charCodeAt(at);
        if (zone === 90 || zone === 122) {
          at++;
        } else if (zone === 43 || zone === 45) {
          const oh = digits(text, at + 1, 2);
          const colon = text.charCodeAt(at + 3) === 58 ? 1 : 0;
          const om = digits(text, at + 3 + colon, 2);
          if (oh < 0 || om < 0 || oh > 23 || om > 59) return NaN;
          offsetMinutes = (zone === 43 ? 1 : -1) * (oh * 60 + om);
          at += 5 + colon;
        }
      }
      if (at === end) {
        return (daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60) * 1000 + ms;
      }
    }
  }
  const parsed = Date.parse(text.slice(start, end));
  return Number.isFinite(parsed) ? Math.floor(parsed) : NaN;
}

const MONTHS: Record<string, number> = {
  Jan: 1,
  Feb: 2,
  Mar: 3,
  Apr: 4,
  May: 5,
  Jun: 6,
  Jul: 7,
  Aug: 8,
  Sep: 9,
  Oct: 10,
  Nov: 11,
  Dec: 12,
};

/** The common log format's `10/Oct/2000:13:55:36 -0700` (the text between the brackets). Second resolution. */
export function parseClfTime(text: string, start = 0, end = text.length): number {
  if (
    end - start !== 26 ||
    text.charCodeAt(start + 2) !== 47 ||
    text.charCodeAt(start + 6) !== 47 ||
    text.charCodeAt(start + 11) !== 58 ||
    text.charCodeAt(start + 20) !== 32
  ) {
    return NaN;
  }
  const day = digits(text, start, 2);
  const month = MONTHS[text.slice(start + 3, start + 6)] ?? -1;
  const year = digits(text, start + 7, 4);
  const hour = digits(text, start + 12, 2);
  const minute = digits(text, start + 15, 2);
  const second = digits(text, start + 18, 2);
  const sign = text.charCodeAt(start + 21);
  const oh = digits(text, start + 22, 2);
  const om = digits(text, start + 24, 2);
  if (day < 0 || month < 0 || year < 0 || hour < 0 || minute < 0 || second < 0 || oh < 0 || om < 0 || (sign !== 43 && sign !== 45))
    return NaN;
  if (!validClock(month, day, hour, minute, second) || oh > 23 || om > 59) return NaN;
  const offsetMinutes = (sign === 43 ? 1 : -1) * (oh * 60 + om);
  return (daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60) * 1000;
}

/**
 * Epoch seconds or milliseconds as a number: below 1e11 it is seconds (1e11 s is the year 5138; 1e11 ms is
 * 1973), at or above it milliseconds. Fractions are floored to the millisecond. NaN for anything negative or
 * not finite.
 */
export function epochToMs(value: number): number {
  if (!Number.isFinite(value) || value < 0) return NaN;
  return Math.floor(value < 1e11 ? value * 1000 : value);
}

/** Formats epoch ms as `dd/Mon/yyyy:HH:MM:SS +0000` for the generator's combined-format lines. */
export function formatClfTime(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => (n < 10 ? `0${n}` : String(n));
  const month = Object.keys(MONTHS)[d.getUTCMonth()]!;
  return `${pad(d.getUTCDate())}/${month}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}
