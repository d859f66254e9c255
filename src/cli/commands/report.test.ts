import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runCli } from '../../report/test-support/cli-process.js';
import { writeSyntheticRun } from '../../report/test-support/synthetic-run.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-report-cli-'));
const run = path.join(scratch, 'run');
before(() => writeSyntheticRun(run, { stages: 3 }));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('teamtr report --json prints one JSON object naming the page and every figure it wrote', async () => {
  const out = path.join(scratch, 'out');
  const { code, stdout } = await runCli(['report', run, '--out', out, '--json']);
  assert.equal(code, 0);
  assert.equal(stdout.trim().split('\n').length, 1);
  const result = JSON.parse(stdout) as {
    html: string;
    figures: Array<{ id: string; path: string }>;
    runs: string[];
  };
  assert.equal(result.html, path.join(out, 'index.html'));
  assert.equal(result.figures.length, 7);
  for (const figure of result.figures) assert.ok(existsSync(figure.path), figure.path);
  assert.deepEqual(result.runs, [run]);
});

test('teamtr report writes to <run>/report by default and says where', async () => {
  const { code, stdout } = await runCli(['report', run]);
  assert.equal(code, 0);
  assert.match(stdout, new RegExp(`Report for 1 run: ${path.join(run, 'report', 'index.html')}`));
  assert.ok(readFileSync(path.join(run, 'report', 'figures', 'kl.svg'), 'utf8').startsWith('<svg'));
});
