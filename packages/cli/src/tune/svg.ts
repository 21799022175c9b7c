/**
 * The HTML report's two charts as inline SVG strings: no script, no external file, so the report opens anywhere
 * and can be attached to a ticket. Scales are computed here; the page only styles them.
 */
import { count } from '../format.js';
import { placeLabels } from './label-layout.js';

const COLORS = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];

export function color(i: number): string {
  return COLORS[i % COLORS.length]!;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const WIDTH = 900;
const HEIGHT = 320;
const LEFT = 70;
const RIGHT = 20;
const TOP = 20;
const BOTTOM = 50;

export interface LimitMark {
  readonly label: string;
  readonly value: number;
  readonly color: string;
  readonly dashed?: boolean;
}

/**
 * Histogram of identities by their busiest period's count, both axes logarithmic (the traffic is heavy-tailed:
 * most identities send a handful, a few send thousands), with each candidate limit as a vertical line.
 */
export function peakDistributionChart(histogram: ReadonlyArray<readonly [number, number]>, marks: readonly LimitMark[]): string {
  const maxValue = Math.max(2, ...histogram.map(([v]) => v), ...marks.map((m) => m.value)) * 1.1;
  // Bins 1.25x wide on the log axis; adjacent integers merge only once they are that close.
  const edges: number[] = [1];
  while (edges[edges.length - 1]! <= maxValue)
    edges.push(Math.max(edges[edges.length - 1]! + 1, Math.ceil(edges[edges.length - 1]! * 1.25)));
  const bins = new Array<number>(edges.length - 1).fill(0);
  for (const [value, n] of histogram) {
    let i = 0;
    while (i < bins.length - 1 && value >= edges[i + 1]!) i++;
    bins[i]! += n;
  }
  const maxCount = Math.max(1, ...bins);
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const x = (v: number) => LEFT + (Math.log(v) / Math.log(edges[edges.length - 1]!)) * plotW;
  const y = (n: number) => TOP + plotH - (n <= 0 ? 0 : (Math.log10(n + 1) / Math.log10(maxCount + 1)) * plotH);
  const parts: string[] = [];
  parts.push(axes(plotW, plotH, 'requests in the identity’s busiest period (log scale)', 'identities (log scale)'));
  bins.forEach((n, i) => {
    if (n === 0) return;
    const x0 = x(edges[i]!);
    const x1 = x(edges[i + 1]!);
    parts.push(
      `<rect class="bar" x="${x0.toFixed(1)}" y="${y(n).toFixed(1)}" width="${Math.max(1, x1 - x0 - 1).toFixed(1)}" height="${(TOP + plotH - y(n)).toFixed(1)}" fill="#7f8c9a"><title>${count(edges[i]!)}–${count(edges[i + 1]! - 1)}: ${count(n)} identities</title></rect>`,
    );
  });
  for (const tick of logTicks(edges[edges.length - 1]!)) {
    parts.push(`<text class="tick" x="${x(tick).toFixed(1)}" y="${TOP + plotH + 16}" text-anchor="middle">${count(tick)}</text>`);
  }
  for (const tick of logTicks(maxCount)) {
    parts.push(`<text class="tick" x="${LEFT - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${count(tick)}</text>`);
  }
  const labels = placeLabels(
    marks.map((m) => x(m.value)),
    marks.map((m) => m.label),
    { left: LEFT, right: LEFT + plotW, top: TOP },
  );
  for (const m of marks) {
    const mx = x(m.value).toFixed(1);
    parts.push(
      `<line class="limit" x1="${mx}" x2="${mx}" y1="${TOP}" y2="${TOP + plotH}" stroke="${m.color}" stroke-width="2"${m.dashed ? ' stroke-dasharray="6 4"' : ''}><title>${escapeHtml(m.label)}</title></line>`,
    );
  }
  // Labels after every line, each in a row where it clears the others (label-layout.ts), on a white halo so a
  // line or bar behind stays readable.
  marks.forEach((m, i) => {
    const box = labels[i]!;
    parts.push(
      `<text class="limit-label" x="${box.x.toFixed(1)}" y="${box.y}" text-anchor="${box.anchor}" fill="${m.color}" stroke="#fff" stroke-width="3" paint-order="stroke">${escapeHtml(m.label)}</text>`,
    );
  });
  return svg('peak-distribution', 'Identities by requests in their busiest period, with the candidate limits', parts);
}

export interface Series {
  readonly label: string;
  readonly color: string;
  readonly values: readonly number[];
}

/** Refused requests per time bucket, one line per candidate, over the log's requests as a grey area. */
export function refusedOverTimeChart(starts: readonly number[], requests: readonly number[], series: readonly Series[]): string {
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const n = starts.length;
  const maxRefused = Math.max(1, ...series.flatMap((s) => s.values));
  const maxRequests = Math.max(1, ...requests);
  const x = (i: number) => LEFT + (n <= 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v: number, max: number) => TOP + plotH - (v / max) * plotH;
  const parts: string[] = [];
  parts.push(axes(plotW, plotH, 'time (UTC)', 'refused requests per bucket'));
  if (n > 0) {
    const area = [
      `${x(0).toFixed(1)},${TOP + plotH}`,
      ...requests.map((v, i) => `${x(i).toFixed(1)},${y(v, maxRequests).toFixed(1)}`),
      `${x(n - 1).toFixed(1)},${TOP + plotH}`,
    ];
    parts.push(
      `<polygon class="requests" points="${area.join(' ')}" fill="#dfe4ea"><title>all requests (scaled to the chart's height; peak ${count(maxRequests)} per bucket)</title></polygon>`,
    );
    for (const s of series) {
      parts.push(
        `<polyline class="refused" points="${s.values.map((v, i) => `${x(i).toFixed(1)},${y(v, maxRefused).toFixed(1)}`).join(' ')}" fill="none" stroke="${s.color}" stroke-width="1.5"><title>${escapeHtml(s.label)}</title></polyline>`,
      );
    }
    for (const [i, anchor] of [
      [0, 'start'],
      [Math.floor((n - 1) / 2), 'middle'],
      [n - 1, 'end'],
    ] as const) {
      parts.push(
        `<text class="tick" x="${x(i).toFixed(1)}" y="${TOP + plotH + 16}" text-anchor="${anchor}">${new Date(starts[i]!).toISOString().slice(0, 19).replace('T', ' ')}</text>`,
      );
    }
  }
  for (const v of [0, maxRefused / 2, maxRefused]) {
    parts.push(`<text class="tick" x="${LEFT - 6}" y="${(y(v, maxRefused) + 4).toFixed(1)}" text-anchor="end">${count(v)}</text>`);
  }
  return svg('refused-over-time', 'Refused requests over time per candidate', parts);
}

function axes(plotW: number, plotH: number, xLabel: string, yLabel: string): string {
  return (
    `<line class="axis" x1="${LEFT}" y1="${TOP + plotH}" x2="${LEFT + plotW}" y2="${TOP + plotH}" stroke="#333"/>` +
    `<line class="axis" x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${TOP + plotH}" stroke="#333"/>` +
    `<text class="axis-label" x="${LEFT + plotW / 2}" y="${HEIGHT - 8}" text-anchor="middle">${xLabel}</text>` +
    `<text class="axis-label" transform="translate(14 ${TOP + plotH / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text>`
  );
}

function svg(id: string, title: string, parts: readonly string[]): string {
  return `<svg id="${id}" role="img" aria-label="${escapeHtml(title)}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg"><title>${escapeHtml(title)}</title>${parts.join('')}</svg>`;
}

/** 1, 10, 100, ... up to `max`. */
function logTicks(max: number): number[] {
  const ticks: number[] = [];
  for (let t = 1; t <= max; t *= 10) ticks.push(t);
  return ticks;
}
