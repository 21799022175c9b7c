// Plain-text side-by-side table. Ratios are time ratios: "2.50x" under "÷ floor" means a decision takes 2.5
// times as long as the floor's; below 1 means faster than the base row.

const INTEGER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function formatInteger(value) {
  return INTEGER.format(value);
}

export function formatRatio(value) {
  if (!Number.isFinite(value)) return '–';
  return `${value >= 10 ? value.toFixed(1) : value.toFixed(2)}x`;
}

/**
 * Adds `row[ratio.key] = row.nsPerOp / base.nsPerOp` for each ratio spec and returns the rows.
 * @param {Array<{ name: string, nsPerOp: number }>} rows
 * @param {Array<{ key: string, base: string }>} ratios
 */
export function addRatios(rows, ratios) {
  for (const ratio of ratios) {
    const base = rows.find((r) => r.name === ratio.base);
    if (base === undefined) throw new Error(`ratio ${ratio.key}: no row named ${JSON.stringify(ratio.base)}`);
    for (const row of rows) row[ratio.key] = Math.round((row.nsPerOp / base.nsPerOp) * 100) / 100;
  }
  return rows;
}

/**
 * Renders rows as an aligned table: name, median ns/op, ops/s, round spread, one column per ratio, then
 * any extra columns `{ key, label, format? }`.
 */
export function formatTable(rows, { ratios = [], columns = [] } = {}) {
  const header = [
    '',
    rows[0]?.clock === 'cpu' ? 'cpu ns/op' : 'ns/op',
    'ops/s',
    'spread',
    ...ratios.map((r) => r.label),
    ...columns.map((c) => c.label),
  ];
  const body = rows.map((row) => [
    row.name,
    row.nsPerOp.toFixed(1),
    formatInteger(row.opsPerSec),
    row.spreadPct === undefined ? '' : `±${(row.spreadPct / 2).toFixed(0)}%`,
    ...ratios.map((r) => formatRatio(row[r.key])),
    ...columns.map((c) => (row[c.key] === undefined ? '' : c.format ? c.format(row[c.key], row) : String(row[c.key]))),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i].length)));
  const line = (cells) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(header), rule, ...body.map(line)].join('\n');
}
