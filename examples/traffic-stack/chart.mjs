// The chart start.mjs writes: requests per time bucket for each priority class (admitted, limited, shed), and the
// worker shedder's amount underneath. Plain SVG text, no dependency.

const COLORS = { admitted: '#2e7d32', limited: '#f2a900', shed: '#c62828' };
const esc = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n) => (Math.round(n * 10) / 10).toString();

/**
 * @param {object} input
 * @param {string[]} input.classes  most important first
 * @param {number} input.bucketMs
 * @param {number} input.endMs
 * @param {{ name: string, from: number, to: number }[]} input.phases
 * @param {Map<string, { admitted: number, limited: number, shed: number }[]>} input.buckets  per class, per bucket
 * @param {(number | undefined)[]} input.amounts  worker shedding amount per bucket
 * @param {string} input.title
 * @param {Record<string, string>} [input.notes]  a line under a class's name
 */
export function renderChart({ classes, bucketMs, endMs, phases, buckets, amounts, title, notes = {} }) {
  const width = 960;
  const left = 104;
  const right = 20;
  const plotW = width - left - right;
  const panelH = 96;
  const gap = 26;
  const top = 78;
  const amountH = 90;
  const height = top + classes.length * (panelH + gap) + amountH + 54;
  const x = (ms) => left + (ms / endMs) * plotW;
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="${left}" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`);
  // Legend.
  const legend = [
    ['admitted (2xx)', COLORS.admitted],
    ['limited (429: rate, concurrency)', COLORS.limited],
    ['shed (503: fleet, worker)', COLORS.shed],
  ];
  let lx = left;
  for (const [label, color] of legend) {
    out.push(`<rect x="${lx}" y="36" width="12" height="12" fill="${color}"/><text x="${lx + 17}" y="46">${esc(label)}</text>`);
    lx += 30 + label.length * 6.4;
  }
  out.push(`<text x="${lx}" y="46" fill="#555">requests per ${bucketMs} ms, by the time they were sent</text>`);

  const plotTop = top;
  const plotBottom = top + classes.length * (panelH + gap) + amountH;
  // Phases: the overload shaded, every boundary dashed and named.
  for (const phase of phases) {
    if (phase.name === 'overload') {
      out.push(
        `<rect x="${fmt(x(phase.from))}" y="${plotTop - 12}" width="${fmt(x(phase.to) - x(phase.from))}" height="${plotBottom - plotTop + 12}" fill="#fbe9e7"/>`,
      );
    }
    out.push(
      `<text x="${fmt((x(phase.from) + x(phase.to)) / 2)}" y="${plotTop - 16}" text-anchor="middle" fill="#444">${esc(phase.name)}</text>`,
    );
    if (phase.from > 0)
      out.push(
        `<line x1="${fmt(x(phase.from))}" y1="${plotTop - 12}" x2="${fmt(x(phase.from))}" y2="${plotBottom}" stroke="#999" stroke-dasharray="4 3"/>`,
      );
  }

  const barW = Math.max(1, (bucketMs / endMs) * plotW - 1);
  classes.forEach((cls, i) => {
    const y0 = top + i * (panelH + gap);
    const series = buckets.get(cls);
    const max = Math.max(1, ...series.map((b) => b.admitted + b.limited + b.shed));
    const scale = niceCeil(max);
    const y = (v) => y0 + panelH - (v / scale) * panelH;
    out.push(`<text x="${left - 10}" y="${y0 + panelH / 2 + 4}" text-anchor="end" font-weight="bold">${esc(cls)}</text>`);
    if (notes[cls] !== undefined)
      out.push(`<text x="${left - 10}" y="${y0 + panelH / 2 + 18}" text-anchor="end" fill="#555" font-size="10">${esc(notes[cls])}</text>`);
    out.push(`<line x1="${left}" y1="${y0 + panelH}" x2="${left + plotW}" y2="${y0 + panelH}" stroke="#333"/>`);
    out.push(`<line x1="${left}" y1="${y0}" x2="${left + plotW}" y2="${y0}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${left + 3}" y="${y0 + 10}" fill="#777" font-size="10">${scale}</text>`);
    series.forEach((b, k) => {
      const bx = fmt(x(k * bucketMs) + 0.5);
      let base = 0;
      for (const part of ['admitted', 'limited', 'shed']) {
        const v = b[part];
        if (v === 0) continue;
        out.push(
          `<rect x="${bx}" y="${fmt(y(base + v))}" width="${fmt(barW)}" height="${fmt(y(base) - y(base + v))}" fill="${COLORS[part]}"/>`,
        );
        base += v;
      }
    });
  });

  // The worker shedder's amount: below 0 at rest; test is shed from 0 (all of it at 1/3), read from 1/3, write from 2/3.
  const a0 = top + classes.length * (panelH + gap);
  const amin = -0.25;
  const ay = (v) => a0 + amountH - ((v - amin) / (1 - amin)) * amountH;
  out.push(`<text x="${left - 10}" y="${a0 + amountH / 2 - 4}" text-anchor="end" font-weight="bold">worker</text>`);
  out.push(`<text x="${left - 10}" y="${a0 + amountH / 2 + 10}" text-anchor="end" fill="#555" font-size="10">shedding</text>`);
  for (const [v, label] of [
    [0, '0: test starts'],
    [1 / 3, '1/3: all test, read starts'],
    [2 / 3, '2/3: all read, write starts'],
    [1, '1: all but critical'],
  ]) {
    out.push(`<line x1="${left}" y1="${fmt(ay(v))}" x2="${left + plotW}" y2="${fmt(ay(v))}" stroke="#bbb" stroke-dasharray="2 3"/>`);
    out.push(`<text x="${left + plotW - 2}" y="${fmt(ay(v) - 2)}" text-anchor="end" fill="#777" font-size="10">${esc(label)}</text>`);
  }
  out.push(`<line x1="${left}" y1="${a0 + amountH}" x2="${left + plotW}" y2="${a0 + amountH}" stroke="#333"/>`);
  const points = [];
  amounts.forEach((v, k) => {
    if (v !== undefined) points.push(`${fmt(x((k + 0.5) * bucketMs))},${fmt(ay(Math.max(amin, Math.min(1, v))))}`);
  });
  if (points.length > 0) out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="#1565c0" stroke-width="2"/>`);

  // Time axis.
  const axisY = plotBottom + 16;
  for (let s = 0; s * 1000 <= endMs; s++) {
    out.push(`<line x1="${fmt(x(s * 1000))}" y1="${plotBottom}" x2="${fmt(x(s * 1000))}" y2="${plotBottom + 4}" stroke="#333"/>`);
    out.push(`<text x="${fmt(x(s * 1000))}" y="${axisY}" text-anchor="middle" fill="#333">${s}</text>`);
  }
  out.push(`<text x="${left + plotW / 2}" y="${axisY + 18}" text-anchor="middle" fill="#333">seconds since the load started</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function niceCeil(n) {
  for (const step of [5, 10, 20, 25, 50, 100, 200, 250, 500, 1000]) if (n <= step) return step;
  return Math.ceil(n / 1000) * 1000;
}
