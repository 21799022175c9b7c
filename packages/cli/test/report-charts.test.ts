// The HTML report's charts: limit labels that never overlap, and refusals over time in buckets of whole windows.
import { describe, expect, it } from 'vitest';
import { parseRuleFlag } from '../src/index.js';
import { CHAR_PX, overlaps, placeLabels, type LabelBox } from '../src/tune/label-layout.js';
import { Replay } from '../src/tune/replay.js';
import { htmlReport } from '../src/tune/report-html.js';
import { peakDistributionChart } from '../src/tune/svg.js';
import { timelineBucketMs } from '../src/tune/timeline.js';
import { LOG_START, tuneText, iso } from './helpers.js';

/** The label boxes of a rendered histogram, from its SVG, with the layout's own width estimate. */
function renderedLabels(svg: string): LabelBox[] {
  const boxes: LabelBox[] = [];
  for (const m of svg.matchAll(/<text class="limit-label" x="([\d.]+)" y="([\d.]+)" text-anchor="(start|end)"[^>]*>([^<]*)<\/text>/g)) {
    const x = Number(m[1]);
    const y = Number(m[2]);
    const width = m[4]!.replace(/&#\d+;/g, '_').length * CHAR_PX;
    const left = m[3] === 'start' ? x : x - width;
    boxes.push({ x, y, anchor: m[3] as 'start' | 'end', left, right: left + width, top: y - 11, bottom: y + 3 });
  }
  return boxes;
}

function expectNoOverlap(boxes: readonly LabelBox[]): void {
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) expect(overlaps(boxes[i]!, boxes[j]!), `labels ${i} and ${j} overlap`).toBe(false);
  }
}

const histogram: Array<[number, number]> = [
  [1, 5000],
  [5, 2000],
  [40, 300],
  [200, 20],
  [900, 2],
];

describe('limit labels on the histogram', () => {
  it('never overlap for the candidates 30, 60, 120 and 300 per minute and the exact limit', () => {
    const marks = ['fixed-window:30/1m', 'fixed-window:60/1m', 'fixed-window:120/1m', 'fixed-window:300/1m'].map((label, i) => ({
      label,
      value: [30, 60, 120, 300][i]!,
      color: '#000',
    }));
    marks.push({ label: 'exact fixed-window:97/1m', value: 97, color: '#000' });
    const boxes = renderedLabels(peakDistributionChart(histogram, marks));
    expect(boxes).toHaveLength(5);
    expectNoOverlap(boxes);
  });

  it('never overlap for many candidates a few requests apart, and stay inside the chart', () => {
    const values = [30, 31, 32, 33, 35, 40, 45, 50, 60, 61, 62, 120, 121, 300, 301, 899, 900];
    const marks = values.map((value) => ({ label: `sliding-window-counter:${value}/1m`, value, color: '#000' }));
    const svg = peakDistributionChart(histogram, marks);
    const boxes = renderedLabels(svg);
    expect(boxes).toHaveLength(values.length);
    expectNoOverlap(boxes);
    for (const b of boxes) {
      expect(b.left).toBeGreaterThanOrEqual(70);
      expect(b.right).toBeLessThanOrEqual(880);
    }
  });

  it('puts labels of distant lines in one row and staggers close ones', () => {
    const boxes = placeLabels([100, 104, 600], ['a:30/1m', 'b:31/1m', 'c:300/1m'], { left: 70, right: 880, top: 20 });
    expect(boxes[0]!.y).toBe(boxes[2]!.y);
    expect(boxes[1]!.y).toBeGreaterThan(boxes[0]!.y);
    expectNoOverlap(boxes);
  });
});

describe('refused requests over time', () => {
  it('buckets by whole windows of every candidate', () => {
    expect(timelineBucketMs([60_000], 60_000)).toBe(60_000);
    expect(timelineBucketMs([60_000, 300_000], 60_000)).toBe(300_000);
    expect(timelineBucketMs([60_000, 90_000], 60_000)).toBe(180_000);
    expect(timelineBucketMs([], 30_000)).toBe(30_000);
  });

  it('draws no saw for a steady client over 1-minute fixed windows: every full minute refuses the same', () => {
    // One request a second for 20 minutes against fixed-window:30/1m: 30 refused in each minute. Buckets of 10 s
    // counted 0, 0, 0, 10, 10, 10 in every minute.
    const replay = new Replay([parseRuleFlag('fixed-window:30/1m')], 60_000);
    for (let s = 0; s < 20 * 60; s++) replay.request(0, LOG_START + s * 1000);
    expect(replay.timeline.bucketMs).toBe(60_000);
    const buckets = replay.timeline.list();
    expect(buckets).toHaveLength(20);
    for (const b of buckets) {
      expect(b.start % 60_000).toBe(0);
      expect(b.requests).toBe(60);
      expect(b.refused).toEqual([30]);
    }
  });

  it('names the bucket length in the HTML report and keeps empty stretches as zeros on a time axis', async () => {
    const lines: string[] = [];
    for (let s = 0; s < 600; s++) lines.push(JSON.stringify({ time: iso(LOG_START + s * 1000), user_id: 'steady' }));
    // Ten quiet minutes, then five more minutes of traffic.
    for (let s = 1200; s < 1500; s++) lines.push(JSON.stringify({ time: iso(LOG_START + s * 1000), user_id: 'steady' }));
    const report = await tuneText(lines.join('\n'), { candidates: [parseRuleFlag('fixed-window:30/1m')] });
    const html = htmlReport(report);
    expect(html).toContain('<p class="muted" id="buckets">Buckets of 1m, whole windows of every candidate.');
    const polyline = /<polyline class="refused" points="([^"]*)"/.exec(html)![1]!.split(' ');
    // Minutes 0 to 24: 25 points, the quiet ones included.
    expect(polyline).toHaveLength(25);
    const ys = polyline.map((p) => Number(p.split(',')[1]));
    const full = ys[0]!;
    expect(ys.slice(0, 10).every((y) => y === full)).toBe(true);
    expect(ys.slice(10, 20).every((y) => y > full)).toBe(true);
  });
});
