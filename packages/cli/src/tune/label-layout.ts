/**
 * Places the limit labels of the histogram so that no two overlap, however close their lines: each label sits
 * beside its line (right of it, or left when it would run off the chart), in the first row from the top where its
 * box clears every label already in that row. Rows are taken left to right by line position, so close limits
 * stagger downwards and distant ones share a row. Widths are estimated on the safe side (`CHAR_PX` is wider than
 * any character of the 11 px labels in common sans-serif fonts), so an estimate that clears is a rendering that clears.
 */

/** Estimated width of one character of an 11 px semibold label, px (an upper bound for the labels' characters). */
export const CHAR_PX = 7.2;
/** Distance between rows, px (11 px text with room to spare). */
export const ROW_PX = 14;
/** Gap kept between a label and its line, and between two labels in a row, px. */
const GAP_PX = 4;
/** Height of a label's box above its baseline, px. */
const ASCENT_PX = 11;

export interface LabelBox {
  /** Where the text is drawn: its anchor point's x and its baseline. */
  readonly x: number;
  readonly y: number;
  readonly anchor: 'start' | 'end';
  /** The box the text occupies. */
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

export interface LabelArea {
  readonly left: number;
  readonly right: number;
  /** Top of the first row. */
  readonly top: number;
}

/** Boxes for labels `texts[i]` beside lines at `xs[i]`, in the given order. */
export function placeLabels(xs: readonly number[], texts: readonly string[], area: LabelArea): LabelBox[] {
  const rows: Array<Array<{ left: number; right: number }>> = [];
  const boxes = new Array<LabelBox>(xs.length);
  const order = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]! || a - b);
  for (const i of order) {
    const x = xs[i]!;
    const width = texts[i]!.length * CHAR_PX;
    const anchor = x + GAP_PX + width <= area.right ? 'start' : 'end';
    let left = anchor === 'start' ? x + GAP_PX : x - GAP_PX - width;
    // A label too wide for either side starts at the chart's left edge rather than off it.
    if (left < area.left) left = area.left;
    const right = left + width;
    let row = 0;
    while (rows[row]?.some((b) => left < b.right + GAP_PX && b.left < right + GAP_PX)) row++;
    (rows[row] ??= []).push({ left, right });
    const y = area.top + ASCENT_PX + row * ROW_PX;
    boxes[i] = { x: anchor === 'start' ? left : right, y, anchor, left, right, top: y - ASCENT_PX, bottom: y + 3 };
  }
  return boxes;
}

/** Whether two boxes share any point. */
export function overlaps(a: LabelBox, b: LabelBox): boolean {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}
