/// <reference lib="dom" />
// The page-side callback below runs in the browser, hence the DOM types in this file only.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLogLines, htmlReport, parseRuleFlag } from '../src/index.js';
import { CHAR_PX } from '../src/tune/label-layout.js';
import { tempFile, tuneText } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
let browser: BrowserContext;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing; the HTML report test needs it. Install it with: apt-get update && apt-get install -y chromium (or sh scripts/install-chromium.sh)`,
    );
  }
  // A fresh profile directory each run (playwright passes it as --user-data-dir).
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1000, height: 1400 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  rmSync(profile, { recursive: true, force: true });
});

describe('the HTML report in a real browser', () => {
  it('renders both charts with the candidate limits and refusals, and a screenshot that is not blank', async () => {
    const text = [...generateLogLines({ lines: 30_000, seed: 2, ratePerSecond: 100 })].join('');
    const specs = ['fixed-window:30/1m', 'sliding-window-counter:60/1m', 'gcra:120/1m:burst=40'];
    const report = await tuneText(text, { candidates: specs.map(parseRuleFlag) });
    const file = tempFile(htmlReport(report), '.html');
    const page = await browser.newPage();
    await page.goto(`file://${file}`);

    await expect(page.locator('svg#peak-distribution rect.bar').count()).resolves.toBeGreaterThan(5);
    // One line per candidate plus the exact fixed-window limit, each labelled.
    await expect(page.locator('svg#peak-distribution line.limit').count()).resolves.toBe(specs.length + 1);
    await expect(page.locator('svg#peak-distribution text.limit-label').allTextContents()).resolves.toEqual([
      ...specs,
      `exact ${report.exactFixedWindow.label}`,
    ]);
    await expect(page.locator('svg#refused-over-time polyline.refused').count()).resolves.toBe(specs.length);
    await expect(page.locator('svg#refused-over-time polygon.requests').count()).resolves.toBe(1);
    await expect(page.locator('#candidates tr').count()).resolves.toBe(specs.length + 1);
    await expect(page.locator('#recommendation').textContent()).resolves.toContain(report.exactFixedWindow.label);
    const box = await page.locator('svg#peak-distribution').boundingBox();
    expect(box?.width).toBeGreaterThan(800);

    const shot = join(tmpdir(), 'sluice-tune-report.png');
    await page.screenshot({ path: shot, fullPage: true });
    // Not blank: the charts' colours are there. Counted on the PNG's decoded pixels through the page itself.
    const colours = await page.evaluate(async (png) => {
      const image = new Image();
      image.src = `data:image/png;base64,${png}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      const data = context.getImageData(0, 0, image.width, image.height).data;
      const seen = new Set<number>();
      let ink = 0;
      for (let i = 0; i < data.length; i += 4) {
        seen.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
        if (data[i]! < 200 || data[i + 1]! < 200 || data[i + 2]! < 200) ink++;
      }
      return { distinct: seen.size, inkShare: ink / (data.length / 4), red: seen.has(0xd62728) };
    }, readFileSync(shot).toString('base64'));
    expect(colours.distinct).toBeGreaterThan(20);
    expect(colours.inkShare).toBeGreaterThan(0.01);
    expect(colours.red).toBe(true); // the first candidate's colour, #d62728
    await page.close();
  });

  it('draws the limit labels of close candidates without overlap, measured by the browser', async () => {
    const text = [...generateLogLines({ lines: 30_000, seed: 3, ratePerSecond: 100 })].join('');
    const limits = [30, 31, 33, 60, 62, 120, 125, 300];
    const specs = limits.map((l) => `sliding-window-counter:${l}/1m`);
    const report = await tuneText(text, { candidates: specs.map(parseRuleFlag) });
    const page = await browser.newPage();
    await page.goto(`file://${tempFile(htmlReport(report), '.html')}`);
    const boxes = await page.evaluate(() =>
      Array.from(document.querySelectorAll<SVGTextElement>('svg#peak-distribution text.limit-label')).map((t) => {
        const b = t.getBBox();
        return { left: b.x, right: b.x + b.width, top: b.y, bottom: b.y + b.height, characters: t.textContent!.length };
      }),
    );
    expect(boxes).toHaveLength(specs.length + 1);
    // The layout's width estimate holds in a real font.
    for (const b of boxes) expect(b.right - b.left).toBeLessThanOrEqual(b.characters * CHAR_PX);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i]!, boxes[j]!];
        const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        expect(overlap, `labels ${i} and ${j} overlap: ${JSON.stringify([a, b])}`).toBe(false);
      }
    }
    await page.close();
  });
});
