import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { writeSyntheticRun } from '../report/test-support/synthetic-run.js';
import { appendTranscripts, type Transcript } from '../trainer/outputs/transcripts.js';
import { startDashboard, type DashboardServer } from './server.js';
import { browserSkipReason, launchChromium, type LaunchedBrowser } from './test-support/browser.js';

/** What the agents wrote, in the dashboard: its API and the page that draws it. */

const transcript = (stage: number, id: string, solver: string): Transcript => ({
  stage,
  problem: { id, prompt: '2+3', answer: '5' },
  sample: 0,
  reward: solver === '5' ? 1 : 0,
  correct: solver === '5',
  turns: [
    { agent: 'solver', text: solver, tokens: 2, ended: 'stop' },
    { agent: 'finalizer', text: '<b>not html</b>', tokens: 6, ended: 'turn limit' },
  ],
});

let scratch: string;
let server: DashboardServer;

before(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-transcripts-'));
  const runDirectory = path.join(scratch, 'run');
  await writeSyntheticRun(runDirectory);
  appendTranscripts(runDirectory, [transcript(1, 'p1', '4'), transcript(1, 'p2', '6')]);
  appendTranscripts(runDirectory, [transcript(2, 'p3', '5')]);
  server = await startDashboard({ runDirectories: [runDirectory], port: 0, pollIntervalMs: 250 });
});
after(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function get(pathAndQuery: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server.url.replace(/\/$/, '')}${pathAndQuery}`);
  return { status: response.status, body: await response.json() };
}

describe('the dashboard shows transcripts', () => {
  test('GET /api/runs/:id/transcripts: the latest stage, or the one asked for', async () => {
    const latest = await get('/api/runs/0/transcripts');
    assert.equal(latest.status, 200);
    assert.deepEqual(latest.body, {
      stages: [1, 2],
      stage: 2,
      transcripts: [transcript(2, 'p3', '5')],
    });
    const first = (await get('/api/runs/0/transcripts?stage=1')).body as {
      transcripts: Transcript[];
    };
    assert.deepEqual(
      first.transcripts.map((entry) => entry.problem.id),
      ['p1', 'p2'],
    );
    const bad = await get('/api/runs/0/transcripts?stage=x');
    assert.equal(bad.status, 400);
    assert.match((bad.body as { error: string }).error, /stage must be a stage number/);
    assert.equal((await get('/api/runs/7/transcripts')).status, 404);
  });

  describe('in headless Chromium', { skip: browserSkipReason() ?? false }, () => {
    let browser: LaunchedBrowser;
    let page: Page;
    before(async () => {
      browser = await launchChromium();
      page = await browser.context.newPage();
    });
    after(async () => browser?.close());

    test('each turn with its agent, tokens and ending; another stage on request; text stays text', async () => {
      await page.goto(server.url);
      await page.waitForSelector('#transcripts .transcript');
      const shown = await page.locator('#transcripts').innerText();
      assert.match(shown, /stage 2/);
      assert.match(shown, /problem p3 · episode 0 · reward 1 \(correct\)/);
      assert.match(shown, /solver — 2 tokens, ended by stop\n5/);
      assert.match(shown, /finalizer — 6 tokens, ended by turn limit\n<b>not html<\/b>/);
      assert.equal(await page.locator('#transcripts b').count(), 0);
      await page.locator('#transcripts select').nth(1).selectOption('1');
      await page.waitForFunction(() => {
        const root = (
          globalThis as unknown as {
            document: { getElementById(id: string): { textContent: string } };
          }
        ).document.getElementById('transcripts');
        return root.textContent.includes('problem p2');
      });
      assert.equal(await page.locator('#transcripts .transcript').count(), 2);
    });
  });
});
