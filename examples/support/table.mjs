// The examples' printed tables: rows of cells, each column as wide as its widest cell, indented two spaces.

/** @param {ReadonlyArray<ReadonlyArray<unknown>>} rows the header row first */
export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  return rows
    .map(
      (row) =>
        '  ' +
        row
          .map((cell, i) => String(cell).padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
    )
    .join('\n');
}
