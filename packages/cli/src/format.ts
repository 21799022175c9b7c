/** Number, share and time formatting shared by tune's terminal and HTML reports (tune/) and the config deny commands. */

export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** A share as a percentage with enough digits to tell 0.1% from 0.01%. */
export function percent(share: number): string {
  if (share === 0) return '0%';
  const p = share * 100;
  if (p >= 10) return `${p.toFixed(1)}%`;
  if (p >= 1) return `${p.toFixed(2)}%`;
  if (p >= 0.01) return `${p.toFixed(3)}%`;
  return `${p.toPrecision(2)}%`;
}

export function bytes(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

export function isoTime(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** Left-aligned first column, right-aligned others, two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
