import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { figureIds } from '../report/figures.js';
import { writeSyntheticRun } from '../report/test-support/synthetic-run.js';
import { tinyRun } from '../report/test-support/tiny-run.js';
import { writeReport } from '../report/write-report.js';
import { startDashboard, type DashboardServer } from './server.js';
import { browserSkipReason, launchChromium, type LaunchedBrowser } from './test-support/browser.js';

/**
 * The dashboard end to end: a real run directory from a tiny training run next to a run that
 * is still being written, served by the real server and drawn by uPlot in headless Chromium.
 */

type JsonRecord = Record<string, unknown> & { type: string };

/** The parts of the browser's globals the page callbacks use (the project compiles without DOM types). */
interface BrowserElement {
  width?: number;
  querySelector(selector: string): BrowserElement | null;
  querySelectorAll(selector: string): { length: number };
  getBoundingClientRect(): { width: number; height: number };
}
interface BrowserGlobals {
  teamtrDashboard: {
    charts: Record<string, { series: unknown[]; data: Array<Array<number | null>> }>;
    state: { polls: number };
  };
  document: BrowserElement & {
    getElementById(id: string): BrowserElement | null;
    documentElement: { scrollWidth: number };
  };
  innerWidth: number;
}

function readRecords(directory: string): JsonRecord[] {
  return readFileSync(path.join(directory, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as JsonRecord);
}

const isNumber = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value);

/**
 * How many series each figure must draw, worked out from the raw records on their own: a run
 * contributes a series only where it has at least one value to plot.
 */
function expectedSeries(runs: JsonRecord[][]): Record<string, number> {
  const updatesOf = (records: JsonRecord[]) => records.filter((record) => record.type === 'update');
  const stagesOf = (records: JsonRecord[]) => records.filter((record) => record.type === 'stage');
  const count = (predicate: (records: JsonRecord[]) => boolean) => runs.filter(predicate).length;
  const hasRankShift = (records: JsonRecord[], inRegion: boolean) =>
    updatesOf(records).some(
      (record) =>
        record.inRegion === inRegion &&
        (record.probabilityShiftByRank as Array<{ massShiftPerPosition: unknown }>).some((entry) =>
          isNumber(entry.massShiftPerPosition),
        ),
    );
  const deltas = new Set(
    runs.flatMap((records) => updatesOf(records).map((record) => record.delta)),
  );
  return {
    reward: count((records) =>
      updatesOf(records).some((record) => isNumber(record.batchRewardMean)),
    ),
    accuracy: count((records) => records.some((record) => record.type === 'eval')),
    kl:
      runs.reduce(
        (total, records) =>
          total +
          new Set(
            updatesOf(records)
              .filter((record) => isNumber(record.kl))
              .map((record) => record.agent),
          ).size,
        0,
      ) + deltas.size,
    certificate:
      2 *
      count((records) => updatesOf(records).some((record) => isNumber(record.measuredImprovement))),
    occupancy: count((records) =>
      updatesOf(records).some((record) => isNumber(record.occupancyGap)),
    ),
    'rank-shift':
      count((records) => hasRankShift(records, true)) +
      count((records) => hasRankShift(records, false)),
    regressions: runs.reduce(
      (total, records) =>
        total +
        (stagesOf(records).length ? 2 : 0) +
        (stagesOf(records).some((record) => record.regression === true) ? 1 : 0),
      0,
    ),
  };
}

/** Sends `rawPath` as is (fetch and browsers would normalize "..") and returns the status. */
function rawStatus(server: DashboardServer, rawPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: '127.0.0.1', port: server.port, path: rawPath },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    request.end();
  });
}

interface ChartState {
  series: number;
  legend: number;
  canvasWidth: number;
  empty: boolean;
}

async function chartStates(page: Page): Promise<Record<string, ChartState>> {
  return page.evaluate(
    (ids) => {
      const browser = globalThis as unknown as BrowserGlobals;
      const charts = browser.teamtrDashboard.charts;
      const states: Record<
        string,
        { series: number; legend: number; canvasWidth: number; empty: boolean }
      > = {};
      for (const id of ids) {
        const panel = browser.document.getElementById(`figure-${id}`);
        states[id] = {
          series: charts[id] ? charts[id].series.length - 1 : 0,
          legend: panel ? panel.querySelectorAll('.u-legend .u-series').length : -1,
          canvasWidth: panel?.querySelector('canvas')?.width ?? 0,
          empty: Boolean(panel?.querySelector('.empty')),
        };
      }
      return states;
    },
    [...figureIds],
  );
}

describe('dashboard in headless Chromium', { skip: browserSkipReason() ?? false }, () => {
  let scratch = '';
  let realRun = '';
  let liveRun = '';
  let server: DashboardServer;
  let browser: LaunchedBrowser;
  let page: Page;
  const pageErrors: string[] = [];
  const offsiteRequests: string[] = [];

  before(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-e2e-'));
    realRun = (await tinyRun()).runDirectory;
    liveRun = path.join(scratch, 'stale-live');
    await writeSyntheticRun(liveRun, { schedule: 'sequential-stale', running: true, stages: 3 });
    server = await startDashboard({
      runDirectories: [realRun, liveRun],
      port: 0,
      pollIntervalMs: 200,
    });
    browser = await launchChromium();
    await browser.context.route('**/*', (route) => {
      const url = route.request().url();
      // The dashboard itself, and the report file opened from disk in the last test.
      if (url.startsWith(server.url) || url.startsWith('file:')) return route.continue();
      offsiteRequests.push(url);
      return route.abort();
    });
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('every figure is drawn with one series per run, agent or group that has data', async () => {
    const expected = expectedSeries([readRecords(realRun), readRecords(liveRun)]);
    const states = await chartStates(page);
    for (const id of figureIds) {
      const state = states[id]!;
      if (expected[id]! > 0) {
        assert.deepEqual(
          { series: state.series, legend: state.legend, empty: state.empty },
          { series: expected[id], legend: expected[id], empty: false },
          id,
        );
        assert.ok(state.canvasWidth > 200, `${id} has a canvas`);
      } else {
        assert.deepEqual(
          { series: state.series, empty: state.empty },
          { series: 0, empty: true },
          `${id} says there is no data yet`,
        );
      }
    }
    assert.equal(await page.locator('#runs .card').count(), 2);
    assert.equal(await page.locator('#runs .card .badge.running').count(), 1);
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(offsiteRequests, [], 'the page loads nothing from outside the dashboard');
  });

  test('a metrics line appended while the page is open appears without a reload; half a line waits', async () => {
    const metrics = path.join(realRun, 'metrics.jsonl');
    const records = readRecords(realRun);
    const last = records[records.length - 1]!;
    const line = JSON.stringify({
      type: 'eval',
      stage: Number(last.stage) + 1,
      generatedTokens: Number(last.generatedTokens) + 777,
      accuracy: 0.4321,
      interval: [0.3, 0.55],
      count: 20,
      meanReward: 0.4321,
      agents: [],
    });
    const polls = () =>
      page.evaluate(() => (globalThis as unknown as BrowserGlobals).teamtrDashboard.state.polls);
    const accuracyValues = () =>
      page.evaluate(() =>
        (globalThis as unknown as BrowserGlobals).teamtrDashboard.charts
          .accuracy!.data.slice(1)
          .flat(),
      );

    appendFileSync(metrics, line.slice(0, 30));
    const pollsBefore = await polls();
    await page.waitForFunction(
      (count) => (globalThis as unknown as BrowserGlobals).teamtrDashboard.state.polls >= count + 3,
      pollsBefore,
      { timeout: 10_000 },
    );
    assert.ok(!(await accuracyValues()).includes(0.4321), 'half a line is not read');
    assert.equal(
      await page.locator('#live.ok').count(),
      1,
      'the half-written line is not an error',
    );

    appendFileSync(metrics, `${line.slice(30)}\n`);
    await page.waitForFunction(
      () =>
        (globalThis as unknown as BrowserGlobals).teamtrDashboard.charts
          .accuracy!.data.slice(1)
          .flat()
          .includes(0.4321),
      undefined,
      { timeout: 10_000 },
    );
    assert.match(
      (await page.locator('#feed').textContent()) ?? '',
      /eval accuracy 43\.2% \(n=20\)/,
    );
    assert.deepEqual(pageErrors, []);
  });

  test('path traversal is refused, from the browser and from a raw request', async () => {
    const fromBrowser = await page.evaluate(() =>
      fetch('/api/runs/0/files/..%2f..%2fetc%2fpasswd').then((response) => response.status),
    );
    assert.equal(fromBrowser, 403);
    assert.equal(await rawStatus(server, '/api/runs/0/files/../../../../etc/passwd'), 403);
    assert.equal(await rawStatus(server, '/api/runs/1/files/%2e%2e/%2e%2e/etc/passwd'), 403);
    assert.equal(await rawStatus(server, '/api/runs/0/files/config.json'), 200);
  });

  test('the page fits a narrow window: the grid becomes one column and charts shrink', async () => {
    await page.setViewportSize({ width: 480, height: 900 });
    await page.waitForFunction(
      () => {
        const canvas = (globalThis as unknown as BrowserGlobals).document.querySelector(
          '#figure-reward canvas',
        );
        return canvas !== null && canvas.getBoundingClientRect().width <= 480;
      },
      undefined,
      { timeout: 10_000 },
    );
    const overflow = await page.evaluate(() => {
      const browser = globalThis as unknown as BrowserGlobals;
      return browser.document.documentElement.scrollWidth - browser.innerWidth;
    });
    assert.ok(overflow <= 1, `page overflows by ${overflow}px`);
    await page.setViewportSize({ width: 1400, height: 1000 });
  });

  test('the report opens with no network and shows every figure', async () => {
    const result = await writeReport({
      runDirectories: [realRun, liveRun],
      outputDirectory: path.join(scratch, 'report'),
    });
    const reportPage = await browser.context.newPage();
    const requests: string[] = [];
    reportPage.on('request', (request) => requests.push(request.url()));
    try {
      const url = pathToFileURL(result.htmlPath).href;
      await reportPage.goto(url);
      const sizes = await reportPage.evaluate(
        (ids) =>
          ids.map((id) => {
            const box = (globalThis as unknown as BrowserGlobals).document
              .querySelector(`#figure-${id} svg`)
              ?.getBoundingClientRect();
            return box ? box.width * box.height : 0;
          }),
        [...figureIds],
      );
      sizes.forEach((area, index) => assert.ok(area > 10_000, `${figureIds[index]} is visible`));
      assert.deepEqual(requests, [url], 'nothing but the file itself is requested');
    } finally {
      await reportPage.close();
    }
  });
});
